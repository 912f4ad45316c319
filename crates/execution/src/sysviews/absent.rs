//! The catalog views of kinds of objects tessera has none of yet: CLR assemblies, XML
//! schema collections, Service Broker queues and services, and partition schemes and
//! functions. Each has SQL Server's columns and no rows, for the tools that read them
//! while they learn a database (Flyway's clean lists every one before it drops
//! anything). A view moves out of here when its kind of object arrives.

use super::objects::{OBJECT_COLUMNS, OBJECT_WIDTH};
use super::{col, concat_columns, ViewDef, SYSNAME};
use tessera_semantics::types::SqlType::*;

pub(super) static ASSEMBLIES: ViewDef<10> = ViewDef {
    schema: "sys",
    name: "assemblies",
    columns: [
        col("name", SYSNAME, false),
        col("principal_id", Int, true),
        col("assembly_id", Int, false),
        col("clr_name", NVarChar(4000), true),
        col("permission_set", TinyInt, true),
        col("permission_set_desc", NVarChar(60), true),
        col("is_visible", Bit, false),
        col("create_date", DateTime, false),
        col("modify_date", DateTime, false),
        col("is_user_defined", Bit, true),
    ],
    rows: |_, _| Ok(Vec::new()),
};

pub(super) static XML_SCHEMA_COLLECTIONS: ViewDef<6> = ViewDef {
    schema: "sys",
    name: "xml_schema_collections",
    columns: [
        col("xml_collection_id", Int, false),
        col("schema_id", Int, false),
        col("principal_id", Int, true),
        col("name", SYSNAME, false),
        col("create_date", DateTime, false),
        col("modify_date", DateTime, false),
    ],
    rows: |_, _| Ok(Vec::new()),
};

pub(super) static SERVICE_QUEUES: ViewDef<{ OBJECT_WIDTH + 8 }> = ViewDef {
    schema: "sys",
    name: "service_queues",
    columns: concat_columns(
        OBJECT_COLUMNS,
        [
            col("max_readers", SmallInt, true),
            col("activation_procedure", NVarChar(776), true),
            col("execute_as_principal_id", Int, true),
            col("is_activation_enabled", Bit, true),
            col("is_receive_enabled", Bit, true),
            col("is_enqueue_enabled", Bit, true),
            col("is_retention_enabled", Bit, true),
            col("is_poison_message_handling_enabled", Bit, true),
        ],
    ),
    rows: |_, _| Ok(Vec::new()),
};

pub(super) static SERVICES: ViewDef<4> = ViewDef {
    schema: "sys",
    name: "services",
    columns: [
        col("name", SYSNAME, false),
        col("service_id", Int, false),
        col("principal_id", Int, true),
        col("service_queue_id", Int, false),
    ],
    rows: |_, _| Ok(Vec::new()),
};

pub(super) static PARTITION_SCHEMES: ViewDef<7> = ViewDef {
    schema: "sys",
    name: "partition_schemes",
    columns: [
        col("name", SYSNAME, false),
        col("data_space_id", Int, false),
        col("type", Char(2), false),
        col("type_desc", NVarChar(60), true),
        col("is_default", Bit, true),
        col("is_system", Bit, true),
        col("function_id", Int, false),
    ],
    rows: |_, _| Ok(Vec::new()),
};

pub(super) static PARTITION_FUNCTIONS: ViewDef<9> = ViewDef {
    schema: "sys",
    name: "partition_functions",
    columns: [
        col("name", SYSNAME, false),
        col("function_id", Int, false),
        col("type", Char(2), false),
        col("type_desc", NVarChar(60), true),
        col("fanout", Int, false),
        col("boundary_value_on_right", Bit, false),
        col("is_system", Bit, false),
        col("create_date", DateTime, false),
        col("modify_date", DateTime, false),
    ],
    rows: |_, _| Ok(Vec::new()),
};
