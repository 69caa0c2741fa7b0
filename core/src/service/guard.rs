//! The checks every use case starts with: the policy, and the audit record of a refusal or
//! a failed attempt. Shared by every area of the service layer.

use std::sync::Arc;

use crate::audit::{AuditEvent, Outcome};
use crate::policy::{self, Permission};
use crate::store::Store;
use crate::{Actor, Error, Result};

#[derive(Clone)]
pub(crate) struct Guard {
    store: Arc<dyn Store>,
}

impl Guard {
    pub(crate) fn new(store: Arc<dyn Store>) -> Self {
        Self { store }
    }

    /// Checks `permission`; a refusal is audited as `action` on `target` and returned.
    pub(crate) async fn authorize(
        &self,
        actor: &Actor,
        permission: Permission,
        action: &str,
        target: &str,
        tenant: Option<uuid::Uuid>,
    ) -> Result<()> {
        match policy::check(actor, permission) {
            Ok(()) => Ok(()),
            Err(e) => {
                self.audit_refusal(actor, action, target, tenant, &e)
                    .await?;
                Err(e)
            }
        }
    }

    /// The record an id names, for an actor who may see its tenant. `get` reads it from the
    /// store; an id that is not a UUID, nothing stored under it, or a tenant the actor does
    /// not belong to are all `NotFound(what)` (Unauthenticated for no one), so that nothing
    /// tells another tenant's records from missing ones; refusals are audited as `action`.
    pub(crate) async fn visible<T, F, Fut>(
        &self,
        actor: &Actor,
        action: &str,
        (id, what): (&str, &'static str),
        get: F,
        tenant_of: impl Fn(&T) -> uuid::Uuid,
    ) -> Result<T>
    where
        F: FnOnce(uuid::Uuid) -> Fut,
        Fut: std::future::Future<Output = Result<T>>,
    {
        let found = match uuid::Uuid::parse_str(id.trim()) {
            Ok(uuid) => match get(uuid).await {
                Ok(v) => Some(v),
                Err(Error::NotFound(_)) => None,
                Err(e) => return Err(e),
            },
            Err(_) => None,
        };
        let tenant = found.as_ref().map(&tenant_of);
        let error = match found {
            Some(v) => match policy::check(actor, Permission::ViewTenant(tenant_of(&v))) {
                Ok(()) => return Ok(v),
                Err(Error::Unauthenticated) => Error::Unauthenticated,
                Err(_) => Error::NotFound(what),
            },
            None if actor.identity().is_none() && !actor.is_trusted() => Error::Unauthenticated,
            None => Error::NotFound(what),
        };
        self.audit_refusal(actor, action, id, tenant, &error)
            .await?;
        Err(error)
    }

    /// Passes `result` through, auditing a client error (invalid input, conflict, not found)
    /// as a failed `action` on `target`.
    pub(crate) async fn audited<T>(
        &self,
        actor: &Actor,
        action: &str,
        target: &str,
        tenant: Option<uuid::Uuid>,
        result: Result<T>,
    ) -> Result<T> {
        if let Err(e) = &result {
            if e.is_client_error() {
                self.audit_refusal(actor, action, target, tenant, e).await?;
            }
        }
        result
    }

    /// Records a refused or failed attempt.
    pub(crate) async fn audit_refusal(
        &self,
        actor: &Actor,
        action: &str,
        target: &str,
        tenant: Option<uuid::Uuid>,
        error: &Error,
    ) -> Result<()> {
        let outcome = match error {
            Error::Forbidden | Error::Refused(_) | Error::Unauthenticated | Error::NotFound(_) => {
                Outcome::Denied
            }
            _ => Outcome::Failure,
        };
        let target: String = target.chars().take(100).collect();
        let mut event =
            AuditEvent::now(actor, action, target, outcome).with_detail(error.to_string());
        event.tenant_id = tenant;
        self.store.record_audit(&event).await
    }
}
