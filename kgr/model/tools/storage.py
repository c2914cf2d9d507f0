"""The contract of ``query_kg_storage``: its input and output models (conventions in :mod:`kgr.model.tools`)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator

from kgr.model.kg import ExtractedKG

from kgr.model.tools.base import Count, ToolInput, ToolOutput, bounded_kg

__all__ = ["KGStorageInput", "OperationStatus", "StorageStatus", "DuplicatesDetected", "ProcessingTime",
           "StorageDetails", "DatabaseConfig", "PerformanceMetrics", "StorageSummary", "KGStorageOutput"]

# ------------------------------------------------------------------------------------------------
# Tool 6: query_kg_storage
# ------------------------------------------------------------------------------------------------


class KGStorageInput(ToolInput):
    extracted_kg: ExtractedKG = Field(description="the (disambiguated) extraction to store")
    source: Annotated[str, Field(min_length=1, max_length=512)] | None = Field(
        None, description="who asserts these relations (a chunk or document id); one source is one vote")

    _check_kg = field_validator("extracted_kg")(bounded_kg)


class OperationStatus(ToolOutput):
    code: Literal[0, -1] = Field(description="0 success, -1 failure (details in message)")
    message: str
    stored_count: Count
    skipped_count: Count
    failed_count: Count


class StorageStatus(ToolOutput):
    overall_success: bool
    entities_storage: OperationStatus
    relations_storage: OperationStatus


class DuplicatesDetected(ToolOutput):
    entity_duplicates: Count
    relation_duplicates: Count


class ProcessingTime(ToolOutput):
    entities_time: float
    relations_time: float
    total_time: float


class StorageDetails(ToolOutput):
    total_entities: Count
    total_relations: Count
    entity_types_processed: list[str]
    relation_types_processed: list[str]
    duplicates_detected: DuplicatesDetected
    processing_time: ProcessingTime


class DatabaseConfig(ToolOutput):
    host: str
    database: str


class PerformanceMetrics(ToolOutput):
    entities_per_second: float
    relations_per_second: float
    overall_throughput: float


class StorageSummary(ToolOutput):
    operation_timestamp: str
    database_config: DatabaseConfig
    performance_metrics: PerformanceMetrics


class KGStorageOutput(ToolOutput):
    storage_status: StorageStatus
    storage_details: StorageDetails
    final_kg: ExtractedKG
    storage_summary: StorageSummary
    warnings: list[str]
    recommendations: list[str]
