"""Text utilities shared by the extractors and the ingestion loop (no other kgr imports)."""
