"""Declared configuration: ConfigDef, validators, typed parsing and masked passwords.

Every plugin (connector, converter, transformation, predicate, config provider) and the
runtime itself declare their keys here once; REST validation, plugin documentation and
typed access all derive from that one declaration.
"""

from connect.api.config.abstract_config import AbstractConfig
from connect.api.config.config_def import Config, ConfigDef, ConfigKey, ConfigValue, Recommender
from connect.api.config.parsing import parse_value, to_config_string
from connect.api.config.types import NO_DEFAULT, ConfigType, Importance, Password, Width
from connect.api.config.validators import (
    CaseInsensitiveValidString,
    CompositeValidator,
    LambdaValidator,
    NonEmptyString,
    NonNullValidator,
    Range,
    Validator,
    ValidList,
    ValidString,
)

__all__ = [
    "NO_DEFAULT",
    "AbstractConfig",
    "CaseInsensitiveValidString",
    "CompositeValidator",
    "Config",
    "ConfigDef",
    "ConfigKey",
    "ConfigType",
    "ConfigValue",
    "Importance",
    "LambdaValidator",
    "NonEmptyString",
    "NonNullValidator",
    "Password",
    "Range",
    "Recommender",
    "ValidList",
    "ValidString",
    "Validator",
    "Width",
    "parse_value",
    "to_config_string",
]
