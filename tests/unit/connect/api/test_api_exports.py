"""The public surface of connect.api: pinned exports, documented contracts, no runtime deps."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import connect.api
from connect.api import errors

# The compatibility promise to plugin authors: change it only on purpose.
EXPECTED_ALL = [
    "NO_DEFAULT",
    "AbstractConfig",
    "AlreadyExistsError",
    "CaseInsensitiveValidString",
    "CompositeValidator",
    "Config",
    "ConfigData",
    "ConfigDef",
    "ConfigError",
    "ConfigKey",
    "ConfigProvider",
    "ConfigType",
    "ConfigValue",
    "ConnectError",
    "ConnectRecord",
    "Connector",
    "ConnectorContext",
    "ConnectorTransactionBoundaries",
    "Converter",
    "ConverterType",
    "DataError",
    "Date",
    "Decimal",
    "ErrantRecordReporter",
    "ExactlyOnceSupport",
    "Field",
    "Header",
    "HeaderConverter",
    "Headers",
    "IllegalWorkerStateError",
    "Importance",
    "LambdaValidator",
    "NonEmptyString",
    "NonNullValidator",
    "NotFoundError",
    "OffsetAndMetadata",
    "OffsetStorageReader",
    "Password",
    "Predicate",
    "Range",
    "Recommender",
    "RecordMetadata",
    "RetriableError",
    "Schema",
    "SchemaAndValue",
    "SchemaBuilder",
    "SchemaBuilderError",
    "SinkConnector",
    "SinkRecord",
    "SinkTask",
    "SinkTaskContext",
    "SourceConnector",
    "SourceRecord",
    "SourceTask",
    "SourceTaskContext",
    "Struct",
    "Task",
    "Time",
    "Timestamp",
    "TimestampType",
    "TopicPartition",
    "TransactionContext",
    "Transformation",
    "Type",
    "ValidList",
    "ValidString",
    "Validator",
    "Versioned",
    "Width",
    "validate_value",
]

API_DIR = Path(connect.api.__file__).parent
MODULES = sorted(
    name for _, name, _ in pkgutil.walk_packages(connect.api.__path__, prefix="connect.api.")
)


def test_all_is_exactly_the_promised_surface():
    assert connect.api.__all__ == EXPECTED_ALL


@pytest.mark.parametrize("module_name", ["connect.api", *MODULES])
def test_every_module_has_a_docstring_and_its_all_resolves(module_name):
    module = importlib.import_module(module_name)
    assert (module.__doc__ or "").strip(), f"{module_name} has no module docstring"
    for name in getattr(module, "__all__", []):
        assert hasattr(module, name), f"{module_name}.__all__ names missing {name}"


def test_every_package_init_declares_all():
    for init in API_DIR.rglob("__init__.py"):
        tree = ast.parse(init.read_text())
        targets = [
            t.id
            for node in tree.body
            if isinstance(node, ast.Assign)
            for t in node.targets
            if isinstance(t, ast.Name)
        ]
        assert "__all__" in targets, f"{init} has no __all__"


def test_importing_the_api_loads_no_other_repository_package():
    code = (
        "import sys, connect.api\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('core', 'connectors', 'schema_registry') or "
        "(m.startswith('connect.') and not m.startswith('connect.api')))\n"
        "print(','.join(bad))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == ""


def _public_classes():
    for name in connect.api.__all__:
        value = getattr(connect.api, name)
        if inspect.isclass(value):
            yield name, value


def test_every_abstract_method_documents_its_contract():
    undocumented = []
    for name, cls in _public_classes():
        for method in getattr(cls, "__abstractmethods__", ()):
            if not (inspect.getdoc(getattr(cls, method)) or "").strip():
                undocumented.append(f"{name}.{method}")
    assert undocumented == []


def test_lifecycles_are_ordered_lists():
    for cls in (connect.api.Connector, connect.api.SourceTask, connect.api.SinkTask):
        doc = inspect.getdoc(cls) or ""
        assert "Lifecycle" in doc and "1. " in doc and "Threading" in doc


def test_error_tree():
    assert issubclass(errors.RetriableError, errors.ConnectError)
    assert issubclass(errors.SchemaBuilderError, errors.DataError)
    for cls in (
        errors.DataError,
        errors.ConfigError,
        errors.NotFoundError,
        errors.AlreadyExistsError,
        errors.IllegalWorkerStateError,
    ):
        assert issubclass(cls, errors.ConnectError) and not issubclass(cls, errors.RetriableError)
    assert set(errors.__all__) == {
        name
        for name, value in vars(errors).items()
        if inspect.isclass(value) and issubclass(value, errors.ConnectError)
    }


def test_config_error_message_forms():
    plain = errors.ConfigError("k", "Missing required configuration")
    assert (str(plain), plain.name) == ("Missing required configuration", "k")
    valued = errors.ConfigError("k", "Value must be non-null", value=None)
    assert str(valued) == "Invalid value null for configuration k: Value must be non-null"
    assert errors.ConfigError(None, "general").name is None
