//! `SET timelake.<name> = value`: the session level of Timelake's settings.
//!
//! The registry lives in C++ (it also validates table properties and
//! generates the docs) and is the only validator: this DataFusion config
//! extension keeps no list of names or ranges of its own. It asks C++ to
//! check every value (`check_setting`, unknown names included), holds the
//! values a session set, and hands them to every `plan_scan` request; the
//! descriptions and defaults C++ gives (`describe_settings`) only feed `SHOW`
//! (a setting no session changed shows its default, the value in force).

use std::any::Any;
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use datafusion::common::config::{ConfigEntry, ConfigExtension, ExtensionOptions};
use datafusion::error::{DataFusionError, Result as DFResult};

use crate::callbacks::Callbacks;

/// One settable name with its description (leaked once per process: the
/// registry is static, and `ConfigEntry` wants `&'static str`).
#[derive(Debug, Clone)]
struct Known {
    name: String,
    description: &'static str,
    default: Option<String>,
}

#[derive(Debug, Clone)]
pub struct TimelakeOptions {
    callbacks: Arc<Callbacks>,
    known: Arc<Vec<Known>>,
    values: BTreeMap<String, String>,
}

impl TimelakeOptions {
    /// Asks C++ which settings a session may change.
    pub fn new(callbacks: Arc<Callbacks>) -> crate::error::TlResult<Self> {
        static DESCRIPTIONS: OnceLock<std::sync::Mutex<BTreeMap<String, &'static str>>> =
            OnceLock::new();
        let cache = DESCRIPTIONS.get_or_init(Default::default);
        let mut known = Vec::new();
        for info in callbacks.describe_settings()? {
            let mut cache = cache.lock().unwrap_or_else(|e| e.into_inner());
            let description = *cache
                .entry(format!("{}\u{0}{}", info.name, info.description))
                .or_insert_with(|| Box::leak(info.description.clone().into_boxed_str()));
            known.push(Known {
                name: info.name,
                description,
                default: info.default,
            });
        }
        Ok(Self {
            callbacks,
            known: Arc::new(known),
            values: BTreeMap::new(),
        })
    }

    /// The values set in this session, by SQL name without the prefix.
    pub fn values(&self) -> &BTreeMap<String, String> {
        &self.values
    }
}

/// "Read-Dedup" -> "read_dedup".
fn normalize(key: &str) -> String {
    key.trim().to_ascii_lowercase().replace('-', "_")
}

impl ExtensionOptions for TimelakeOptions {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }

    fn cloned(&self) -> Box<dyn ExtensionOptions> {
        Box::new(self.clone())
    }

    fn set(&mut self, key: &str, value: &str) -> DFResult<()> {
        let name = normalize(key);
        self.callbacks
            .check_setting(&name, value)
            .map_err(|e| DataFusionError::Configuration(e.message))?;
        self.values.insert(name, value.to_string());
        Ok(())
    }

    fn entries(&self) -> Vec<ConfigEntry> {
        self.known
            .iter()
            .map(|k| ConfigEntry {
                key: format!("{}.{}", Self::PREFIX, k.name),
                value: self.values.get(&k.name).or(k.default.as_ref()).cloned(),
                description: k.description,
            })
            .collect()
    }
}

impl ConfigExtension for TimelakeOptions {
    const PREFIX: &'static str = "timelake";
}
