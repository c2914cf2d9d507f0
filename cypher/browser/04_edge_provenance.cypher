// title: Provenance of an edge: edge key, votes, chunks, documents
// about: Where an edge came from: one row per vote (a distinct source), with the chunk and document it was read from (null for votes staged from a bare source id, e.g. a triple file). Take an edge key from "Pending vs promoted edges".
// :param key => 'paste an edge key here'
MATCH (s:Entity)-[p:PENDING_REL]->(o:Entity)
WHERE p.key = $key
MATCH (v:Vote {edge_key: $key})
OPTIONAL MATCH (v)-[:FROM]->(c:Chunk)
OPTIONAL MATCH (c)-[:PART_OF]->(d:Document)
RETURN s.name AS subject, p.type AS relation, o.name AS object, p.status AS status,
       v.source AS source, v.confidence AS confidence, datetime({epochMillis: toInteger(v.at * 1000)}) AS voted_at,
       c.index AS chunk, left(c.text, 200) AS text, d.path AS document, d.id AS document_id
ORDER BY v.at, source
