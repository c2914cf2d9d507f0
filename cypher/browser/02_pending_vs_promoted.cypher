// title: Pending vs promoted edges, with their votes
// about: Every staged assertion (PENDING_REL) with its status, distinct-source votes and noisy-or confidence, and the version of its current promoted relationship (null when it is not in the promoted graph). Undecided edges first, then by votes.
MATCH (s:Entity)-[p:PENDING_REL]->(o:Entity)
OPTIONAL MATCH (s)-[r]->(o)
  WHERE r.key = p.key AND r.valid_from IS NOT NULL AND r.valid_to IS NULL
RETURN p.status AS status, s.name AS subject, p.type AS relation, o.name AS object,
       p.votes AS votes, round(p.confidence, 3) AS confidence, p.sources AS sources,
       r.valid_from AS promoted_in, p.key AS key
ORDER BY CASE p.status WHEN 'pending' THEN 0 WHEN 'held' THEN 1 WHEN 'promoted' THEN 2 ELSE 3 END,
         votes DESC, key
