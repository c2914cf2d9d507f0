// title: What changed between two snapshots
// about: Promoted edges added and removed going from $base to $target. Each is a snapshot name, a version number or 'current' (an unknown name gives no rows). An edge belongs to version V when valid_from <= V < valid_to (valid_to null = still current); edges are compared by key, so an edge retired and restored in between is unchanged.
// :param base => 'A'
// :param target => 'current'
MATCH (st:KgrState {id: 'kgr'})
OPTIONAL MATCH (b:Snapshot {name: $base})
OPTIONAL MATCH (t:Snapshot {name: $target})
WITH coalesce(b.version, CASE WHEN $base = 'current' THEN st.version ELSE toInteger($base) END) AS v0,
     coalesce(t.version, CASE WHEN $target = 'current' THEN st.version ELSE toInteger($target) END) AS v1
WHERE v0 IS NOT NULL AND v1 IS NOT NULL
MATCH (s:Entity)-[r]->(o:Entity)
WHERE r.valid_from IS NOT NULL AND (r.valid_from <= v0 OR r.valid_from <= v1)
WITH v0, v1, r.key AS key, type(r) AS relation, s.name AS subject, o.name AS object,
     collect(r.valid_from <= v0 AND (r.valid_to IS NULL OR r.valid_to > v0)) AS at_base,
     collect(r.valid_from <= v1 AND (r.valid_to IS NULL OR r.valid_to > v1)) AS at_target
WITH v0, v1, key, relation, subject, object, true IN at_base AS before, true IN at_target AS after
WHERE before <> after
RETURN CASE WHEN after THEN 'added' ELSE 'removed' END AS change, subject, relation, object,
       v0 AS base_version, v1 AS target_version, key
ORDER BY change, key
