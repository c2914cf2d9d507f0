// title: Review queue: scored edges nearest the promotion cut
// about: The staged or promoted edges the calibrated policy scored (p_hat) and nobody has labelled, those nearest the promotion cut first: their labels teach the scorer most. `kgr review queue` ranks them exactly (uncertainty x impact) with their evidence and prints the cut; set $tau to it. Answer with `kgr review label FILE.jsonl` or the label_edges tool.
// :param tau => 0.9
MATCH (s:Entity)-[p:PENDING_REL]->(o:Entity)
WHERE p.status IN ['held', 'promoted'] AND p.p_hat IS NOT NULL AND p.label IS NULL
RETURN p.key AS key, s.name AS subject, p.type AS relation, o.name AS object, p.status AS status,
       round(p.p_hat, 4) AS p_hat, p.hold AS hold, p.votes AS votes,
       coalesce(p.supports, 0) AS supports, coalesce(p.contradicts, 0) AS contradicts, coalesce(p.silent, 0) AS silent
ORDER BY abs(p.p_hat - $tau), key
LIMIT 50
