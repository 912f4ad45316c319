//! The paths of the xml `value()` method: the XPath steps SQL Server users write to read
//! one value out of a document (`(/EVENT_INSTANCE/EventType)[1]`, `/order[1]/@id`,
//! `(//item/text())[2]`): child (`/a`) and descendant (`//a`) steps by name or `*`,
//! attributes (`@x`), `text()`, `.`, a position on a step (`a[2]`) or on a whole
//! parenthesized path (`(…)[1]`). As SQL Server, `value()` wants a path that gives at most
//! one node: one whose every element step, or the whole path, has a position (2389
//! otherwise). The value is the node's string value: an element's text, descendants'
//! included; an attribute's value.
//!
//! A document may be a fragment (what FOR XML makes: several elements, or text): it is
//! read as the children of a root of its own.

use tessera_errors::msg;
use tessera_errors::SqlResult;

/// How a step reaches its nodes from the ones before it.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Axis {
    Child,
    Descendant,
}

#[derive(Clone, Debug, PartialEq)]
enum Test {
    /// An element by name (`*`: any).
    Element(String),
    Attribute(String),
    Text,
    /// `.`: the node itself.
    Itself,
}

#[derive(Clone, Debug, PartialEq)]
struct Step {
    axis: Axis,
    test: Test,
    /// `[n]`: the n-th (1-based) of the nodes this step finds from one node.
    position: Option<usize>,
}

/// A path of `value()`.
#[derive(Clone, Debug, PartialEq)]
pub struct XPath {
    steps: Vec<Step>,
    /// `(…)[n]`: the n-th of the nodes the whole path finds.
    position: Option<usize>,
}

/// A path as written; 40534 for one tessera does not read, 2389 for one that may give
/// more than one node.
pub fn parse(path: &str) -> SqlResult<XPath> {
    let unsupported = || msg::XML_PATH_NOT_SUPPORTED.with(&[&path]);
    let text: String = path.chars().filter(|c| !c.is_whitespace()).collect();
    let (inner, position) = match text.strip_prefix('(') {
        Some(rest) => {
            let close = rest.rfind(")[").ok_or_else(unsupported)?;
            let n = rest[close + 2..].strip_suffix(']').and_then(|n| n.parse().ok()).ok_or_else(unsupported)?;
            (rest[..close].to_string(), Some(n))
        }
        None => (text, None),
    };
    let mut steps = Vec::new();
    let mut rest = inner.as_str();
    let mut first = true;
    while !rest.is_empty() || first {
        let axis = if let Some(r) = rest.strip_prefix("//") {
            rest = r;
            Axis::Descendant
        } else if let Some(r) = rest.strip_prefix('/') {
            rest = r;
            Axis::Child
        } else if first {
            Axis::Child
        } else {
            return Err(unsupported());
        };
        first = false;
        let end = rest.find('/').unwrap_or(rest.len());
        let (word, after) = rest.split_at(end);
        rest = after;
        if word.is_empty() {
            // `/` alone: the document.
            if rest.is_empty() && axis == Axis::Child {
                steps.push(Step { axis, test: Test::Itself, position: None });
                break;
            }
            return Err(unsupported());
        }
        let (name, position) = match word.find('[') {
            Some(open) => {
                let n = word[open + 1..].strip_suffix(']').and_then(|n| n.parse().ok()).ok_or_else(unsupported)?;
                (&word[..open], Some(n))
            }
            None => (word, None),
        };
        let test = match name {
            "." => Test::Itself,
            "text()" => Test::Text,
            _ if name.starts_with('@') && is_name(&name[1..]) => Test::Attribute(name[1..].to_string()),
            "*" => Test::Element("*".into()),
            _ if is_name(name) => Test::Element(name.to_string()),
            _ => return Err(unsupported()),
        };
        steps.push(Step { axis, test, position });
    }
    let parsed = XPath { steps, position };
    if !parsed.singleton() {
        return Err(msg::XQUERY_SINGLETON_REQUIRED.err());
    }
    Ok(parsed)
}

fn is_name(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | ':'))
}

impl XPath {
    /// Whether the path gives at most one node.
    fn singleton(&self) -> bool {
        self.position.is_some()
            || self.steps.iter().all(|s| match s.test {
                Test::Element(_) | Test::Text => s.position.is_some(),
                Test::Attribute(_) | Test::Itself => s.axis == Axis::Child,
            })
    }

    /// The string value of the node the path finds in `doc`; None when it finds none
    /// or `doc` is no well-formed XML.
    pub fn value(&self, doc: &str) -> Option<String> {
        let wrapped = format!("<r>{doc}</r>");
        let tree = roxmltree::Document::parse(&wrapped).ok()?;
        let mut nodes = vec![Found::Node(tree.root_element())];
        for step in &self.steps {
            let mut next = Vec::new();
            for node in &nodes {
                let Found::Node(n) = node else { continue };
                let mut found = step.find(*n);
                if let Some(p) = step.position {
                    found = found.into_iter().nth(p.wrapping_sub(1)).into_iter().collect();
                }
                next.extend(found);
            }
            nodes = next;
        }
        let chosen = match self.position {
            Some(p) => nodes.into_iter().nth(p.wrapping_sub(1))?,
            None => nodes.into_iter().next()?,
        };
        Some(match chosen {
            Found::Node(n) if n.is_text() => n.text().unwrap_or_default().to_string(),
            Found::Node(n) => n.descendants().filter(|d| d.is_text()).filter_map(|d| d.text()).collect(),
            Found::Attribute(v) => v,
        })
    }
}

/// A node a step found, or an attribute's value.
enum Found<'a, 'input> {
    Node(roxmltree::Node<'a, 'input>),
    Attribute(String),
}

impl Step {
    fn find<'a, 'input>(&self, from: roxmltree::Node<'a, 'input>) -> Vec<Found<'a, 'input>> {
        let candidates: Vec<roxmltree::Node> = match self.axis {
            Axis::Child => from.children().collect(),
            Axis::Descendant => from.descendants().skip(1).collect(),
        };
        match &self.test {
            Test::Itself => vec![Found::Node(from)],
            Test::Text => candidates.into_iter().filter(|n| n.is_text()).map(Found::Node).collect(),
            Test::Element(name) => candidates
                .into_iter()
                .filter(|n| n.is_element() && (name == "*" || n.tag_name().name() == name))
                .map(Found::Node)
                .collect(),
            Test::Attribute(name) => {
                let holders: Vec<roxmltree::Node> =
                    if self.axis == Axis::Child { vec![from] } else { from.descendants().collect() };
                holders
                    .into_iter()
                    .filter_map(|n| n.attribute(name.as_str()))
                    .map(|v| Found::Attribute(v.into()))
                    .collect()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EVENT: &str =
        "<EVENT_INSTANCE><EventType>CREATE_TABLE</EventType><TSQLCommand><SetOptions ANSI_NULLS=\"ON\"/>\
        <CommandText>CREATE TABLE t (id int)</CommandText></TSQLCommand></EVENT_INSTANCE>";

    fn value(path: &str, doc: &str) -> Option<String> {
        parse(path).unwrap().value(doc)
    }

    #[test]
    fn the_paths_users_write() {
        assert_eq!(value("(/EVENT_INSTANCE/EventType)[1]", EVENT).as_deref(), Some("CREATE_TABLE"));
        assert_eq!(value("/EVENT_INSTANCE[1]/EventType[1]", EVENT).as_deref(), Some("CREATE_TABLE"));
        assert_eq!(value("(//CommandText)[1]", EVENT).as_deref(), Some("CREATE TABLE t (id int)"));
        assert_eq!(value("(/EVENT_INSTANCE/TSQLCommand/SetOptions/@ANSI_NULLS)[1]", EVENT).as_deref(), Some("ON"));
        assert_eq!(value("(/EVENT_INSTANCE/Nothing)[1]", EVENT), None);
        assert_eq!(value("(/a/text())[2]", "<a>x<b>y</b>z</a>").as_deref(), Some("z"));
        assert_eq!(value("(/a)[1]", "<a>x<b>y</b>z</a>").as_deref(), Some("xyz"));
        assert_eq!(value("(/a)[2]", "<a>1</a><a>2</a>").as_deref(), Some("2"));
        assert_eq!(value("(/*)[1]", "<q>3</q>").as_deref(), Some("3"));
        assert_eq!(value("/a[1]/@id", "<a id=\"7\"/>").as_deref(), Some("7"));
    }

    #[test]
    fn paths_that_may_find_several_nodes_or_are_not_read_are_refused() {
        assert_eq!(parse("/EVENT_INSTANCE/EventType").unwrap_err().number, 2389);
        assert_eq!(parse("//a/@x").unwrap_err().number, 2389);
        assert_eq!(parse("(/a[@x=1])[1]").unwrap_err().number, 40534);
        assert_eq!(parse("(/a/b").unwrap_err().number, 40534);
        assert_eq!(parse("sum(/a)").unwrap_err().number, 40534);
    }
}
