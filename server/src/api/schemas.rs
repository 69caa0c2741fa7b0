//! Schemas of strings the core parses (the API takes them as text): their allowed values, for
//! the OpenAPI document. utoipa's derive cannot name a value with the empty string, which some
//! of these accept ("no filter", "the default"), so each is written out here.

use utoipa::openapi::schema::{ObjectBuilder, Schema, SchemaType, Type};
use utoipa::openapi::RefOr;

macro_rules! string_values {
    ($(#[$m:meta])* $name:ident, [$($value:literal),+ $(,)?]) => {
        $(#[$m])*
        pub struct $name;

        impl utoipa::PartialSchema for $name {
            fn schema() -> RefOr<Schema> {
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .enum_values(Some([$($value),+]))
                    .into()
            }
        }

        impl utoipa::ToSchema for $name {}
    };
}

string_values!(
    /// What tenant admins' kubeconfigs may do; empty: `namespaced`.
    AdminAccessIn,
    ["", "namespaced", "cluster-admin"]
);
string_values!(
    /// A list as one JSON page, or everything as CSV.
    ListFormat,
    ["json", "csv"]
);
string_values!(
    /// A cluster state; empty: any.
    ClusterStateFilter,
    ["", "provisioning", "ready", "updating", "deleting", "error", "unknown"]
);
/// A finding's severity; empty: any (spaces around it are ignored).
pub struct SeverityFilter;

impl utoipa::PartialSchema for SeverityFilter {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .pattern(Some(r"^\s*(high|medium|low)?\s*$"))
            .into()
    }
}

impl utoipa::ToSchema for SeverityFilter {}

/// The value of a setting or a parameter: text, a number or a boolean (`null`: left out).
pub struct ParamValue;

impl utoipa::PartialSchema for ParamValue {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(SchemaType::from_iter([
                Type::String,
                Type::Number,
                Type::Boolean,
                Type::Null,
            ]))
            .into()
    }
}

impl utoipa::ToSchema for ParamValue {}

/// A day (`2026-11-25`, UTC) or an RFC 3339 time; empty: no bound.
pub struct DateOrTime;

impl utoipa::PartialSchema for DateOrTime {
    fn schema() -> RefOr<Schema> {
        use utoipa::openapi::schema::{KnownFormat, OneOfBuilder, SchemaFormat};
        let as_format = |f| {
            ObjectBuilder::new()
                .schema_type(Type::String)
                .format(Some(SchemaFormat::KnownFormat(f)))
        };
        OneOfBuilder::new()
            .item(as_format(KnownFormat::Date))
            .item(as_format(KnownFormat::DateTime))
            .item(
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .enum_values(Some([""])),
            )
            .into()
    }
}

impl utoipa::ToSchema for DateOrTime {}
