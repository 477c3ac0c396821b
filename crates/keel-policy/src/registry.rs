//! The policy handler (ARTful paper §3.2, Fig. 2): policies by name, built
//! from spec strings, open to policies users register at run time.
//!
//! One generic [`Registry`] serves every policy family; each family exposes a
//! function returning its registry pre-filled with the built-in policies.
//!
//! Building a built-in mapping policy by name, and asking for one that does not exist:
//!
//! ```
//! use keel_policy::mapping::{self, runtime_context};
//! use keel_policy::PolicyError;
//! let registry = mapping::registry();
//! let greedy = registry.build("greedy").unwrap();
//! let placement = greedy.map(&runtime_context(&[3.0, 1.0, 2.0, 2.0], &[0.0, 0.0])).unwrap();
//! assert_eq!(placement.counts().iter().sum::<usize>(), 4);
//! assert!(matches!(registry.build("fastest"), Err(PolicyError::UnknownPolicy { .. })));
//! ```

use std::fmt;
use std::sync::Arc;

use crate::error::PolicyError;
use crate::spec::Spec;

/// Builds a policy from its spec; receives the registry so that composite
/// policies (such as `hier`) can build their nested specs.
pub type Factory<P> = Arc<dyn Fn(&Spec, &Registry<P>) -> Result<Box<P>, PolicyError> + Send + Sync>;

struct Entry<P: ?Sized> {
    name: String,
    summary: String,
    factory: Factory<P>,
}

/// Named policy factories of one family.
pub struct Registry<P: ?Sized> {
    family: &'static str,
    entries: Vec<Entry<P>>,
}

impl<P: ?Sized> Clone for Registry<P> {
    fn clone(&self) -> Self {
        Registry {
            family: self.family,
            entries: self
                .entries
                .iter()
                .map(|e| Entry {
                    name: e.name.clone(),
                    summary: e.summary.clone(),
                    factory: Arc::clone(&e.factory),
                })
                .collect(),
        }
    }
}

impl<P: ?Sized> fmt::Debug for Registry<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry")
            .field("family", &self.family)
            .field("names", &self.names())
            .finish()
    }
}

impl<P: ?Sized> Registry<P> {
    /// An empty registry for `family` ("mapping", "loop schedule", ...).
    pub fn empty(family: &'static str) -> Self {
        Registry {
            family,
            entries: Vec::new(),
        }
    }

    /// The family name used in messages.
    pub fn family(&self) -> &'static str {
        self.family
    }

    /// Registers a policy under a kebab-case `name`.
    pub fn register<F>(&mut self, name: &str, summary: &str, factory: F) -> Result<(), PolicyError>
    where
        F: Fn(&Spec, &Registry<P>) -> Result<Box<P>, PolicyError> + Send + Sync + 'static,
    {
        let valid_name = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
        if !valid_name {
            return Err(PolicyError::InvalidParameter {
                policy: name.to_string(),
                key: "name".to_string(),
                value: name.to_string(),
                expected: "a kebab-case name (a-z, 0-9, -)".to_string(),
            });
        }
        if self.entries.iter().any(|e| e.name == name) {
            return Err(PolicyError::DuplicatePolicy {
                family: self.family,
                name: name.to_string(),
            });
        }
        self.entries.push(Entry {
            name: name.to_string(),
            summary: summary.to_string(),
            factory: Arc::new(factory),
        });
        Ok(())
    }

    /// Builds a policy from a spec string such as `binlpt:chunks=80`.
    pub fn build(&self, spec: &str) -> Result<Box<P>, PolicyError> {
        self.build_spec(&Spec::parse(spec)?)
    }

    /// Builds a policy from a parsed spec.
    pub fn build_spec(&self, spec: &Spec) -> Result<Box<P>, PolicyError> {
        let entry = self
            .entries
            .iter()
            .find(|e| e.name == spec.name)
            .ok_or_else(|| PolicyError::UnknownPolicy {
                family: self.family,
                name: spec.name.clone(),
                valid: self.names(),
            })?;
        (entry.factory)(spec, self)
    }

    /// Registered names, in registration order.
    pub fn names(&self) -> Vec<String> {
        self.entries.iter().map(|e| e.name.clone()).collect()
    }

    /// `(name, summary)` pairs, in registration order.
    pub fn summaries(&self) -> impl Iterator<Item = (&str, &str)> {
        self.entries
            .iter()
            .map(|e| (e.name.as_str(), e.summary.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    trait Named {
        fn label(&self) -> String;
    }
    struct Fixed(String);
    impl Named for Fixed {
        fn label(&self) -> String {
            self.0.clone()
        }
    }

    fn registry() -> Registry<dyn Named> {
        let mut r: Registry<dyn Named> = Registry::empty("test");
        r.register("fixed", "returns its label", |spec, _| {
            spec.check_keys(&["label"])?;
            let label = spec.token("label")?.unwrap_or("none").to_string();
            Ok(Box::new(Fixed(label)) as Box<dyn Named>)
        })
        .unwrap();
        r
    }

    #[test]
    fn builds_registered_policies_with_parameters() {
        let r = registry();
        assert_eq!(r.build("fixed:label=x").unwrap().label(), "x");
        assert_eq!(r.build("fixed").unwrap().label(), "none");
    }

    #[test]
    fn unknown_names_list_the_valid_ones() {
        let err = registry().build("fixd").err().unwrap();
        assert_eq!(
            err.to_string(),
            "unknown test policy `fixd`; valid names: fixed"
        );
    }

    #[test]
    fn duplicate_and_malformed_names_are_rejected() {
        let mut r = registry();
        let dup = r.register("fixed", "", |_, _| {
            Ok(Box::new(Fixed(String::new())) as Box<dyn Named>)
        });
        assert!(matches!(dup, Err(PolicyError::DuplicatePolicy { .. })));
        let bad = r.register("Bad Name", "", |_, _| {
            Ok(Box::new(Fixed(String::new())) as Box<dyn Named>)
        });
        assert!(bad.is_err());
    }
}
