//! Extended properties (`sp_addextendedproperty`): named values an object carries for the
//! tools that read them (a table's or column's `MS_Description` is its comment). A property
//! lives in the definition of the object it describes, its part (column, parameter, index
//! or constraint) named, not numbered, so it follows the part through renames and goes when
//! the part goes ([`Table::prune_properties`]). A database's and a schema's own properties
//! live with its security (`tessera_security::principals`).

use serde::{Deserialize, Serialize};

use super::Table;

/// The most bytes a property's value may take (error 15097).
pub const MAX_VALUE_BYTES: usize = 7500;

/// One extended property.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Property {
    pub name: String,
    #[serde(default, skip_serializing_if = "Part::is_object")]
    pub part: Part,
    /// The value as text (tessera has no sql_variant, so it reads back as nvarchar); None
    /// for NULL.
    pub value: Option<String>,
}

/// What in an object a property describes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Part {
    /// The object itself.
    #[default]
    Object,
    Column(String),
    Parameter(String),
    Index(String),
    Constraint(String),
}

impl Part {
    pub fn is_object(&self) -> bool {
        *self == Part::Object
    }

    /// Whether `self` and `other` are the same part (names compare case-insensitively).
    pub fn same(&self, other: &Part) -> bool {
        match (self, other) {
            (Part::Object, Part::Object) => true,
            (Part::Column(a), Part::Column(b))
            | (Part::Parameter(a), Part::Parameter(b))
            | (Part::Index(a), Part::Index(b))
            | (Part::Constraint(a), Part::Constraint(b)) => a.eq_ignore_ascii_case(b),
            _ => false,
        }
    }

    /// The part, named `new` when it is the part `old`.
    pub fn renamed(&self, old: &Part, new: &str) -> Part {
        if !self.same(old) {
            return self.clone();
        }
        match self {
            Part::Object => Part::Object,
            Part::Column(_) => Part::Column(new.to_string()),
            Part::Parameter(_) => Part::Parameter(new.to_string()),
            Part::Index(_) => Part::Index(new.to_string()),
            Part::Constraint(_) => Part::Constraint(new.to_string()),
        }
    }
}

/// The position of the property named `name` on `part` in `properties`.
pub fn find(properties: &[Property], part: &Part, name: &str) -> Option<usize> {
    properties.iter().position(|p| p.part.same(part) && p.name.eq_ignore_ascii_case(name))
}

impl Table {
    /// Gives the properties of the part `old` (renamed) its new name.
    pub fn rename_part(&mut self, old: &Part, new: &str) {
        for p in &mut self.properties {
            p.part = p.part.renamed(old, new);
        }
    }

    /// Drops the properties of columns, indexes and constraints the table no longer has
    /// (after an ALTER dropped them), so a part added later under the same name starts
    /// with none.
    pub fn prune_properties(&mut self) {
        if self.properties.is_empty() {
            return;
        }
        let mut properties = std::mem::take(&mut self.properties);
        properties.retain(|p| match &p.part {
            Part::Object => true,
            Part::Column(c) => self.column(c).is_some(),
            Part::Index(i) => self.indexes.iter().any(|ix| !ix.is_heap() && ix.name.eq_ignore_ascii_case(i)),
            Part::Constraint(c) => self.has_constraint(c),
            Part::Parameter(_) => false,
        });
        self.properties = properties;
    }

    /// Whether the table has a constraint named `name` (a key, foreign key, check or
    /// default).
    fn has_constraint(&self, name: &str) -> bool {
        let is = |n: &str| n.eq_ignore_ascii_case(name);
        self.indexes.iter().any(|ix| (ix.primary_key || ix.unique_constraint) && is(&ix.name))
            || self.foreign_keys.iter().any(|fk| is(&fk.name))
            || self.checks.iter().any(|c| is(&c.name))
            || self.columns.iter().filter_map(|c| c.default.as_ref()).any(|d| is(&d.name))
    }
}
