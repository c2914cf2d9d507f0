// title: Entity types: how many entities of each type
// about: One row per entity type (the label next to :Entity), most frequent first, with up to five example names (alphabetical) and how many chunk mentions entities of that type have.
MATCH (e:Entity)
WITH e, COUNT { (e)<-[:MENTIONS]-(:Chunk) } AS mentioned ORDER BY e.name
WITH e.type AS type, collect(e.name) AS names, sum(mentioned) AS mentions
RETURN type, size(names) AS entities, names[..5] AS examples, mentions
ORDER BY entities DESC, type
