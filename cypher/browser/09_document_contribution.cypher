// title: What a document contributed: its chunks' votes, edge by edge
// about: For one document id (a file's absolute path, or a JSONL line's id): every staged edge its chunks voted for, with how many of the edge's votes are this document's, the edge's status and whether it would keep enough votes without them (the quorum of 2 that kgr forget uses by default). Run kgr forget ID --dry-run for the exact effect.
// :param document => 'paste a document id here'
MATCH (c:Chunk)-[:PART_OF]->(d:Document {id: $document})
WITH d, collect(c.id) AS chunks
MATCH (s:Entity)-[p:PENDING_REL]->(o:Entity)
WHERE any(src IN p.sources WHERE src IN chunks)
   OR EXISTS { MATCH (v:Vote) WHERE v.id STARTS WITH p.key + '|' AND v.source IN chunks }
CALL (p, chunks) {
  UNWIND p.sources AS src
  WITH src WHERE src IN chunks
  RETURN count(src) AS inline
}
CALL (p, chunks) {
  MATCH (v:Vote) WHERE v.id STARTS WITH p.key + '|' AND v.source IN chunks
  RETURN count(v) AS overflow
}
WITH d, s, p, o, inline + overflow AS from_document
RETURN s.name AS subject, p.type AS relation, o.name AS object, p.status AS status, p.votes AS votes,
       from_document, p.votes - from_document AS without_it,
       p.status = 'promoted' AND p.votes - from_document < 2 AS promotion_depends_on_it, p.key AS key
ORDER BY promotion_depends_on_it DESC, from_document DESC, key
