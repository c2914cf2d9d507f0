// title: Why is this edge here? The decisions behind an edge
// about: Every promote / reject / expire / retire / restore / merge / split decision recorded for an edge key (a merge or split under its old or its new key), and its latest hold (recorded on the edge itself), oldest first, with the reason, the inputs the policy saw (JSON: votes, gauge terms, gates, rewards, thresholds) and the version it belongs to.
// :param key => 'paste an edge key here'
CALL () {
  MATCH (d:Decision) WHERE d.edge_key = $key OR d.new_key = $key
  RETURN d.version AS version, d.action AS action,
         CASE WHEN d.edge_key = $key THEN d.reason ELSE d.received END AS reason, d.inputs AS inputs, d.at AS at
  UNION ALL
  MATCH ()-[p:PENDING_REL]->() WHERE p.key = $key AND p.held_inputs IS NOT NULL
  RETURN p.held_version AS version, 'hold' AS action, p.held_reason AS reason, p.held_inputs AS inputs, null AS at
}
OPTIONAL MATCH (v:Version {number: version})
WITH version, action, reason, inputs, v.kind AS version_kind, coalesce(at, v.at) AS at
RETURN version, action, reason, inputs, version_kind, datetime({epochMillis: toInteger(at * 1000)}) AS decided_at
ORDER BY version, at, action
