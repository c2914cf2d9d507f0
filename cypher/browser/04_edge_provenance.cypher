// title: Provenance of an edge: edge key, votes, chunks, documents
// about: Where an edge came from: one row per vote (a distinct source), with the chunk and document it was read from and the sentence that said it (the vote's span "start:end" in the chunk; the chunk's first 200 characters for a vote without one) (null for votes staged from a bare source id, e.g. a triple file). The first sources of an edge are kept on the edge (inline), later ones as (:Vote) nodes. Take an edge key from "Pending vs promoted edges".
// :param key => 'paste an edge key here'
MATCH (s:Entity)-[p:PENDING_REL]->(o:Entity)
WHERE p.key = $key
CALL (p) {
  UNWIND range(0, size(p.sources) - 1) AS i
  RETURN p.sources[i] AS source, 'inline' AS kept, p.source_confidence[i] AS confidence, p.source_at[i] AS at,
         coalesce(p.source_span, [])[i] AS span
  UNION ALL
  MATCH (v:Vote) WHERE v.id STARTS WITH p.key + '|'
  RETURN v.source AS source, 'vote node' AS kept, v.confidence AS confidence, v.at AS at, v.span AS span
}
OPTIONAL MATCH (c:Chunk {id: source})
OPTIONAL MATCH (c)-[:PART_OF]->(d:Document)
RETURN s.name AS subject, p.type AS relation, o.name AS object, p.status AS status,
       source, kept, confidence, datetime({epochMillis: toInteger(at * 1000)}) AS voted_at,
       c.index AS chunk, span,
       CASE WHEN coalesce(span, '') = '' THEN left(c.text, 200)
            ELSE substring(c.text, toInteger(split(span, ':')[0]),
                           toInteger(split(span, ':')[1]) - toInteger(split(span, ':')[0])) END AS text,
       d.path AS document, d.id AS document_id
ORDER BY at, source
