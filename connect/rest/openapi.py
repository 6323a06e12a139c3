"""``GET /openapi.json``: an OpenAPI 3 description of every endpoint of this API.

The document is data: one row per operation (path, method, summary, parameters, request
body, responses). A unit test compares it with the app's URL map, so a route added
without a row (or a row without a route) fails the build.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, jsonify

from connect.runtime.server_info import package_version

__all__ = ["OPERATIONS", "bp", "openapi_document"]

bp = Blueprint("openapi", __name__)


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{name}"}


_STR_MAP = {"type": "object", "additionalProperties": {"type": "string"}}
_NULLABLE_STR_MAP = {"type": "object",
                     "additionalProperties": {"type": "string", "nullable": True}}
_ANY_OBJECT: dict[str, Any] = {"type": "object", "additionalProperties": True}

SCHEMAS: dict[str, dict[str, Any]] = {
    "ErrorMessage": {"type": "object", "required": ["error_code", "message"], "properties": {
        "error_code": {"type": "integer"}, "message": {"type": "string"}}},
    "ServerInfo": {"type": "object", "properties": {
        "version": {"type": "string"}, "commit": {"type": "string"},
        "kafka_cluster_id": {"type": "string", "nullable": True}}},
    "Health": {"type": "object", "properties": {
        "status": {"type": "string", "enum": ["healthy", "starting", "unhealthy"]},
        "message": {"type": "string"}}},
    "ConnectorTaskId": {"type": "object", "properties": {
        "connector": {"type": "string"}, "task": {"type": "integer"}}},
    "ConnectorInfo": {"type": "object", "properties": {
        "name": {"type": "string"}, "config": _STR_MAP,
        "tasks": {"type": "array", "items": _ref("ConnectorTaskId")},
        "type": {"type": "string", "enum": ["source", "sink", "unknown"]}}},
    "CreateConnectorRequest": {"type": "object", "required": ["name", "config"],
                               "properties": {
        "name": {"type": "string"}, "config": _STR_MAP,
        "initial_state": {"type": "string", "enum": ["RUNNING", "PAUSED", "STOPPED"]}}},
    "ConnectorState": {"type": "object", "properties": {
        "state": {"type": "string"}, "worker_id": {"type": "string"},
        "trace": {"type": "string"}}},
    "TaskState": {"type": "object", "properties": {
        "id": {"type": "integer"}, "state": {"type": "string"},
        "worker_id": {"type": "string"}, "trace": {"type": "string"}}},
    "ConnectorStateInfo": {"type": "object", "properties": {
        "name": {"type": "string"}, "connector": _ref("ConnectorState"),
        "tasks": {"type": "array", "items": _ref("TaskState")}, "type": {"type": "string"}}},
    "TaskInfo": {"type": "object", "properties": {
        "id": _ref("ConnectorTaskId"), "config": _STR_MAP}},
    "ConnectorOffsets": {"type": "object", "properties": {"offsets": {
        "type": "array", "items": {"type": "object", "properties": {
            "partition": _ANY_OBJECT,
            "offset": {**_ANY_OBJECT, "nullable": True}}}}}},
    "Message": {"type": "object", "properties": {"message": {"type": "string"}}},
    "ActiveTopics": {"type": "object", "additionalProperties": {
        "type": "object", "properties": {"topics": {"type": "array",
                                                    "items": {"type": "string"}}}}},
    "PluginInfo": {"type": "object", "properties": {
        "class": {"type": "string"}, "type": {"type": "string"},
        "version": {"type": "string"}}},
    "ConfigKeyInfo": _ANY_OBJECT,
    "ConfigInfos": {"type": "object", "properties": {
        "name": {"type": "string"}, "error_count": {"type": "integer"},
        "groups": {"type": "array", "items": {"type": "string"}},
        "configs": {"type": "array", "items": _ANY_OBJECT}}},
    "LoggerLevel": {"type": "object", "properties": {
        "level": {"type": "string"},
        "last_modified": {"type": "integer", "nullable": True}}},
}

_CONNECTOR = {"name": "connector", "in": "path", "required": True,
              "schema": {"type": "string"}}
_TASK = {"name": "task", "in": "path", "required": True, "schema": {"type": "integer"}}
_PLUGIN = {"name": "plugin", "in": "path", "required": True, "schema": {"type": "string"}}
_LOGGER = {"name": "logger", "in": "path", "required": True, "schema": {"type": "string"}}


def _query_bool(name: str, default: bool) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False,
            "schema": {"type": "boolean", "default": default}}


_EXPAND = {"name": "expand", "in": "query", "required": False, "explode": True,
           "schema": {"type": "array", "items": {"type": "string",
                                                 "enum": ["status", "info"]}}}
_SCOPE = {"name": "scope", "in": "query", "required": False,
          "schema": {"type": "string", "enum": ["worker", "cluster"], "default": "worker"}}

# (path, method, summary, parameters, request body schema, {status: response schema}).
# Every status an operation can answer is listed (a schema-driven fuzz test checks it):
# 400 for a malformed body or a query boolean other than true/false, 404 for an unknown
# connector, task, plugin or logger, 409 where a distributed worker cannot complete a
# write now (no leader known, a rebalance, a request forwarded twice); 500 is always
# declared and never expected.
_WRITE = {409: None}
OPERATIONS: list[tuple[str, str, str, list[dict[str, Any]], Any, dict[int, Any]]] = [
    ("/", "get", "Worker version and Kafka cluster id", [], None, {200: _ref("ServerInfo")}),
    ("/health", "get", "Worker health (KIP-1017)", [], None,
     {200: _ref("Health"), 503: _ref("Health"), 500: _ref("Health")}),
    ("/openapi.json", "get", "This document", [], None, {200: _ANY_OBJECT}),
    ("/connectors", "get", "Connector names, or a map with ?expand=status|info", [_EXPAND],
     None, {200: {"oneOf": [{"type": "array", "items": {"type": "string"}}, _ANY_OBJECT]}}),
    ("/connectors", "post", "Create a connector (201 + Location)", [],
     _ref("CreateConnectorRequest"), {201: _ref("ConnectorInfo"), 400: None, **_WRITE}),
    ("/connectors/{connector}", "get", "Connector info (secrets shown as [hidden])",
     [_CONNECTOR], None, {200: _ref("ConnectorInfo"), 404: None}),
    ("/connectors/{connector}", "delete", "Delete a connector", [_CONNECTOR], None,
     {204: None, 404: None, **_WRITE}),
    ("/connectors/{connector}/config", "get",
     "Connector config as given (secrets shown as [hidden], ${...} references as written)",
     [_CONNECTOR], None, {200: _STR_MAP, 404: None}),
    ("/connectors/{connector}/config", "put",
     "Create (201) or update (200) a connector; a secret sent as [hidden] keeps its value",
     [_CONNECTOR], _STR_MAP, {200: _ref("ConnectorInfo"), 201: _ref("ConnectorInfo"),
                              400: None, **_WRITE}),
    ("/connectors/{connector}/config", "patch", "Patch a config (null deletes a key)",
     [_CONNECTOR], _NULLABLE_STR_MAP, {200: _ref("ConnectorInfo"), 400: None, 404: None,
                                       **_WRITE}),
    ("/connectors/{connector}/status", "get", "Connector and task states", [_CONNECTOR],
     None, {200: _ref("ConnectorStateInfo"), 404: None}),
    ("/connectors/{connector}/restart", "post", "Restart (KIP-745)",
     [_CONNECTOR, _query_bool("includeTasks", False), _query_bool("onlyFailed", False)],
     None, {202: _ref("ConnectorStateInfo"), 204: None, 400: None, 404: None, **_WRITE}),
    ("/connectors/{connector}/pause", "put", "Pause", [_CONNECTOR], None,
     {202: None, 404: None, **_WRITE}),
    ("/connectors/{connector}/resume", "put", "Resume", [_CONNECTOR], None,
     {202: None, 404: None, **_WRITE}),
    ("/connectors/{connector}/stop", "put", "Stop (KIP-875)", [_CONNECTOR], None,
     {204: None, 404: None, **_WRITE}),
    ("/connectors/{connector}/topics", "get", "Active topics (KIP-558)", [_CONNECTOR],
     None, {200: _ref("ActiveTopics"), 403: None, 404: None}),
    ("/connectors/{connector}/topics/reset", "put", "Reset active topics", [_CONNECTOR],
     None, {202: None, 403: None, 404: None, **_WRITE}),
    ("/connectors/{connector}/tasks", "get", "Task configs (secrets shown as [hidden])",
     [_CONNECTOR], None, {200: {"type": "array", "items": _ref("TaskInfo")}, 404: None}),
    ("/connectors/{connector}/tasks/{task}/status", "get", "One task's state",
     [_CONNECTOR, _TASK], None, {200: _ref("TaskState"), 404: None}),
    ("/connectors/{connector}/tasks/{task}/restart", "post", "Restart one task",
     [_CONNECTOR, _TASK], None, {204: None, 404: None, **_WRITE}),
    ("/connectors/{connector}/offsets", "get", "Offsets (KIP-875)", [_CONNECTOR], None,
     {200: _ref("ConnectorOffsets"), 404: None}),
    ("/connectors/{connector}/offsets", "patch", "Alter offsets of a STOPPED connector",
     [_CONNECTOR], _ref("ConnectorOffsets"),
     {200: _ref("Message"), 400: None, 404: None, **_WRITE}),
    ("/connectors/{connector}/offsets", "delete", "Reset offsets of a STOPPED connector",
     [_CONNECTOR], None, {200: _ref("Message"), 400: None, 404: None, **_WRITE}),
    ("/connector-plugins", "get", "Installed plugins, by the names configs use",
     [_query_bool("connectorsOnly", True)], None,
     {200: {"type": "array", "items": _ref("PluginInfo")}, 400: None}),
    ("/connector-plugins/{plugin}/config", "get", "A plugin's config keys", [_PLUGIN], None,
     {200: {"type": "array", "items": _ref("ConfigKeyInfo")}, 404: None}),
    ("/connector-plugins/{plugin}/config/validate", "put",
     "Validate a config (200 even with errors; secrets shown as [hidden])", [_PLUGIN],
     _STR_MAP, {200: _ref("ConfigInfos"), 400: None}),
    ("/admin/loggers", "get", "Loggers with an explicit level", [], None,
     {200: {"type": "object", "additionalProperties": _ref("LoggerLevel")}}),
    ("/admin/loggers/{logger}", "get", "One logger's level", [_LOGGER], None,
     {200: _ref("LoggerLevel"), 400: None, 404: None}),
    ("/admin/loggers/{logger}", "put", "Set a namespace's level", [_LOGGER, _SCOPE],
     {"type": "object", "required": ["level"], "properties": {"level": {"type": "string"}}},
     {200: {"type": "array", "items": {"type": "string"}}, 204: None, 400: None, 404: None}),
]


def _response(status: int, schema: Any) -> dict[str, Any]:
    if status >= 400 and schema is None:
        schema = _ref("ErrorMessage")
    out: dict[str, Any] = {"description": f"HTTP {status}"}
    if schema is not None:
        out["content"] = {"application/json": {"schema": schema}}
    return out


def openapi_document() -> dict[str, Any]:
    """The OpenAPI 3.0 document for every operation in ``OPERATIONS``."""
    paths: dict[str, dict[str, Any]] = {}
    for path, method, summary, parameters, body, responses in OPERATIONS:
        operation: dict[str, Any] = {
            "summary": summary,
            "responses": {str(s): _response(s, schema) for s, schema in responses.items()},
        }
        operation["responses"].setdefault("500", _response(500, None))
        if parameters:
            operation["parameters"] = parameters
        if body is not None:
            operation["requestBody"] = {"required": True, "content": {
                "application/json": {"schema": body}}}
            # Any body: malformed or too deeply nested JSON is a 400, a huge one a 413.
            operation["responses"].setdefault("400", _response(400, None))
            operation["responses"].setdefault("413", _response(413, None))
        paths.setdefault(path, {})[method] = operation
    return {"openapi": "3.0.3",
            "info": {"title": "Ferry Connect REST API", "version": package_version(),
                     "description": "Kafka Connect's REST API. Every error is "
                                    '{"error_code": <HTTP status>, "message": "..."}.'},
            "paths": paths, "components": {"schemas": SCHEMAS}}


@bp.get("/openapi.json")
def get_openapi() -> Response:
    return jsonify(openapi_document())
