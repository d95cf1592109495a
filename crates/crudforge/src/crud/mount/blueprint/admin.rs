//! The blueprint's hints for the admin page (feature `admin`): the name it shows for the
//! resource, the members its list shows, members' labels. The description carries them as
//! `x-admin` on the list operation, where the page reads them.

use super::CrudBlueprint;
use crate::crud::Resource;

impl<R: Resource> CrudBlueprint<R> {
    /// The name the admin page shows for the resource (by default one made from its path:
    /// `/api/critters/` shows as "Critters").
    #[must_use]
    pub fn admin_label(mut self, label: &str) -> Self {
        self.admin.label = Some(label.to_owned());
        self
    }

    /// The members the admin page's list shows at first, in this order (by default the first
    /// seven it can show, naming members first); its member chooser still offers the others.
    /// A member the resource does not have fails the mount.
    #[must_use]
    pub fn admin_columns<'a>(mut self, members: impl IntoIterator<Item = &'a str>) -> Self {
        for m in members {
            match R::field(m) {
                Some(f) => self.admin.columns.push(f.name),
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
                self.admin.labels.insert(f.name, label.to_owned());
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
