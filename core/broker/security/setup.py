"""Building a broker's authorizer and client quotas from its config and data directory."""

from __future__ import annotations

import logging
from pathlib import Path

from core.broker.config import BrokerConfig, BrokerConfigError
from core.broker.security.authorizer import Authorizer, parse_super_users
from core.broker.security.metadata_store import MetadataSecurityStore
from core.broker.security.quotas import ClientQuotaManager
from core.broker.security.store import FileSecurityStore, SecurityStoreError

__all__ = ["open_security"]

log = logging.getLogger(__name__)


def open_security(config: BrokerConfig, data_dir: Path,
                  store: MetadataSecurityStore | None = None
                  ) -> tuple[Authorizer | None, ClientQuotaManager]:
    """The authorizer (None without ``authorizer.class.name``) and the quota manager, over
    the ACLs and quotas stored in ``data_dir`` (a single node) or in the cluster metadata
    (``store``, a cluster node). Raises BrokerConfigError if they cannot be read: serving
    without the stored ACLs would open what they close."""
    store = store if store is not None else FileSecurityStore(data_dir)
    try:
        quotas = ClientQuotaManager(store, samples=config.quota_window_num,
                                    window_s=float(config.quota_window_size_seconds))
        if not config.authorizer_class_name:
            if store.load_acls():
                log.warning("ACLs are stored but authorizer.class.name is not set: every "
                            "request is allowed")
            return None, quotas
        authorizer = Authorizer(store, super_users=parse_super_users(config.super_users),
                                allow_if_no_acl=config.allow_everyone_if_no_acl_found)
    except SecurityStoreError as exc:
        raise BrokerConfigError(str(exc)) from None
    log.info("authorizer on: %d ACLs, super users %s, allow.everyone.if.no.acl.found=%s",
             len(authorizer.acls()), ", ".join(sorted(authorizer.super_users)) or "none",
             str(authorizer.allow_if_no_acl).lower())
    return authorizer, quotas
