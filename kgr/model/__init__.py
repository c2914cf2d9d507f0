"""Pydantic types shared by every layer: entities, triples, KG schemas, extracted KGs, decisions. No I/O."""
