// title: Expired edges: staged, never confirmed, aged out
// about: PENDING_REL edges that received no new vote within the TTL (kgr age) or that a policy expired. They are kept for audit with their votes, decayed weight and the reason; a new vote revives them. Most recently expired first.
MATCH (s:Entity)-[p:PENDING_REL {status: 'expired'}]->(o:Entity)
RETURN s.name AS subject, p.type AS relation, o.name AS object, p.votes AS votes,
       round(p.weight, 4) AS weight, p.reason AS reason,
       datetime({epochMillis: toInteger(p.last_seen * 1000)}) AS last_vote,
       CASE WHEN p.expired_at IS NULL THEN null
            ELSE datetime({epochMillis: toInteger(p.expired_at * 1000)}) END AS expired_at, p.key AS key
ORDER BY p.expired_at DESC, key
