// title: Why is this edge here? The decisions behind an edge
// about: Every promote / hold / reject / expire / retire / restore decision recorded for an edge key, oldest first, with the reason, the inputs the policy saw (JSON: votes, gauge terms, gates, rewards, thresholds) and the version it belongs to.
// :param key => 'paste an edge key here'
MATCH (d:Decision {edge_key: $key})
OPTIONAL MATCH (v:Version {number: d.version})
RETURN d.version AS version, d.action AS action, d.reason AS reason, d.inputs AS inputs,
       v.kind AS version_kind, datetime({epochMillis: toInteger(d.at * 1000)}) AS decided_at
ORDER BY d.version, d.at, action
