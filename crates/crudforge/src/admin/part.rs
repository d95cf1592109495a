//! The blueprint's hints for the admin page (feature `admin`): the name it shows for the
//! resource, the members its list shows, members' labels. The description carries them as
//! `x-admin` on the list operation, where the page reads them.

use crate::crud::options::Operation;
use crate::crud::shared::Part;
use crate::crud::{CrudBlueprint, Resource};
use std::collections::BTreeMap;

/// What a blueprint tells the admin page about its resource: the name it shows, the members
/// its list shows by default (in order), and members' labels.
#[derive(Debug, Clone, Default)]
pub(crate) struct AdminView {
    /// The resource's label.
    pub(crate) label: Option<String>,
    /// The list's columns.
    pub(crate) columns: Vec<&'static str>,
    /// Members' labels.
    pub(crate) labels: BTreeMap<&'static str, String>,
}

impl AdminView {
    /// The `x-admin` value.
    fn extension(&self) -> serde_json::Value {
        let mut out = serde_json::Map::new();
        if let Some(label) = &self.label {
            out.insert("label".into(), label.clone().into());
        }
        if !self.columns.is_empty() {
            out.insert("columns".into(), self.columns.clone().into());
        }
        if !self.labels.is_empty() {
            let labels = self
                .labels
                .iter()
                .map(|(k, v)| ((*k).to_owned(), serde_json::Value::from(v.clone())))
                .collect();
            out.insert("labels".into(), serde_json::Value::Object(labels));
        }
        serde_json::Value::Object(out)
    }
}

/// The hints go on the list operation, where the page reads them.
impl<R: Resource> Part<R> for AdminView {
    fn extensions(
        &self,
        op: Operation,
        extensions: &mut apistos::IndexMap<String, serde_json::Value>,
    ) {
        if op == Operation::Index {
            extensions.insert("x-admin".to_owned(), self.extension());
        }
    }
}

impl<R: Resource> CrudBlueprint<R> {
    /// The name the admin page shows for the resource (by default one made from its path:
    /// `/api/critters/` shows as "Critters").
    #[must_use]
    pub fn admin_label(mut self, label: &str) -> Self {
        self.parts.entry(AdminView::default).label = Some(label.to_owned());
        self
    }

    /// The members the admin page's list shows at first, in this order (by default the first
    /// seven it can show, naming members first); its member chooser still offers the others.
    /// A member the resource does not have fails the mount.
    #[must_use]
    pub fn admin_columns<'a>(mut self, members: impl IntoIterator<Item = &'a str>) -> Self {
        for m in members {
            match R::field(m) {
                Some(f) => self.parts.entry(AdminView::default).columns.push(f.name),
                None => self.errors.push(format!(
                    "{}: admin_columns names `{m}`, which {} does not have",
                    self.prefix,
                    R::NAME
                )),
            }
        }
        self
    }

    /// The label the admin page shows for `member` (by default one made from its name:
    /// `cuteness_level` shows as "Cuteness level"). A member the resource does not have fails
    /// the mount.
    #[must_use]
    pub fn admin_member_label(mut self, member: &str, label: &str) -> Self {
        match R::field(member) {
            Some(f) => {
                self.parts
                    .entry(AdminView::default)
                    .labels
                    .insert(f.name, label.to_owned());
            }
            None => self.errors.push(format!(
                "{}: admin_member_label names `{member}`, which {} does not have",
                self.prefix,
                R::NAME
            )),
        }
        self
    }
}
