// title: The graph: promoted relationships and undecided pending edges
// about: A picture to look at (graph view): current promoted relationships, labelled by type, and pending or held PENDING_REL edges (grey and thin with kgr's style, captioned with the proposed type and a question mark). Expired, rejected and retired edges are left out.
MATCH path = (s:Entity)-[r]->(o:Entity)
WHERE (r.valid_from IS NOT NULL AND r.valid_to IS NULL)
   OR (type(r) = 'PENDING_REL' AND r.status IN ['pending', 'held'])
RETURN path
LIMIT 300
