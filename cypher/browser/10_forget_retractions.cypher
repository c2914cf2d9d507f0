// title: What forgets did: retractions by version
// about: Every version a forget opened (kgr forget, or kgr ingest re-reading edited or pruned documents), newest first, with each edge it changed: the reason gives the votes before and after and whether the promoted edge was retired; inputs (JSON) name the forgotten sources. Roll back to a snapshot taken before a forget to undo it for the promoted graph.
MATCH (v:Version {kind: 'forget'})
OPTIONAL MATCH (d:Decision {version: v.number, action: 'retract'})
RETURN v.number AS version, datetime({epochMillis: toInteger(v.at * 1000)}) AS at, v.note AS note,
       v.retired AS retired_in_version, d.edge_key AS edge, d.reason AS reason, d.inputs AS inputs
ORDER BY version DESC, edge
