//! Every system view is found by its lower-case name, once.

use super::{lookup, ALL};

#[test]
fn names_are_lower_case_unique_and_found() {
    for (i, v) in ALL.iter().enumerate() {
        assert_eq!(v.schema(), v.schema().to_lowercase());
        assert_eq!(v.name(), v.name().to_lowercase());
        assert!(matches!(v.schema(), "sys" | "information_schema"), "{}", v.name());
        assert!(
            !ALL[..i].iter().any(|w| w.schema() == v.schema() && w.name() == v.name()),
            "{}.{} twice",
            v.schema(),
            v.name()
        );
        let found = lookup(v.schema(), v.name()).unwrap_or_else(|| panic!("{}.{} not found", v.schema(), v.name()));
        assert_eq!(found.id, i);
        assert_eq!(format!("{found:?}"), format!("{}.{}", v.schema(), v.name()));
        assert_eq!(found.columns().len(), v.columns().len());
    }
    assert!(lookup("dbo", "objects").is_none());
}
