//! The key that signs tokens: a configured secret, or a strong random key generated once and
//! kept in the data directory, readable by its owner only.

use super::{Config, ConfigError, Secret, MIN_SECRET_LEN};
use std::fs;
use std::io::Write;
use std::path::Path;

/// Name of the file, inside the data directory, that keeps a generated signing key.
pub(crate) const GENERATED_KEY_FILE: &str = "jwt_secret.key";

impl Config {
    /// The key that signs tokens: `JWT_SECRET_KEY`, else `SECRET_KEY`, else a strong random
    /// key generated once and kept in `<data_dir>/jwt_secret.key` (readable by the owner only),
    /// so tokens survive restarts. There is no built-in default key.
    ///
    /// # Errors
    ///
    /// A too-short configured secret, or a key file that cannot be read or written.
    pub fn signing_key(&self) -> Result<Secret, ConfigError> {
        self.validate()?;
        if let Some(k) = self
            .auth
            .jwt_secret_key
            .as_ref()
            .or(self.auth.secret_key.as_ref())
        {
            return Ok(k.clone());
        }
        load_or_generate_key(&self.db.data_dir.join(GENERATED_KEY_FILE))
    }
}

fn load_or_generate_key(path: &Path) -> Result<Secret, ConfigError> {
    let key_err = |source| ConfigError::KeyFile {
        path: path.to_owned(),
        source,
    };
    match read_private(path) {
        Ok(text) => {
            let key = text.trim().as_bytes().to_vec();
            if key.len() < MIN_SECRET_LEN {
                return Err(key_err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("holds {} bytes; at least {MIN_SECRET_LEN} are needed (delete it to generate a new key)", key.len()),
                )));
            }
            Ok(Secret(key))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if let Some(dir) = path.parent() {
                crate::owner_only::create_dir(dir).map_err(key_err)?;
            }
            let mut raw = [0u8; 48];
            getrandom::fill(&mut raw).map_err(|e| key_err(std::io::Error::other(e.to_string())))?;
            let hex: String = raw.iter().map(|b| format!("{b:02x}")).collect();
            let mut options = fs::OpenOptions::new();
            options.write(true).create_new(true);
            #[cfg(unix)]
            {
                use std::os::unix::fs::OpenOptionsExt;
                options.mode(0o600);
            }
            match options.open(path) {
                Ok(mut file) => {
                    file.write_all(hex.as_bytes()).map_err(key_err)?;
                    file.sync_all().map_err(key_err)?;
                    Ok(Secret(hex.into_bytes()))
                }
                // Another process created it first: use theirs.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    load_or_generate_key(path)
                }
                Err(e) => Err(key_err(e)),
            }
        }
        Err(e) => Err(key_err(e)),
    }
}

/// Reads a key file that only its owner may read or write: on Unix, a file whose mode gives
/// the group or others any access is refused, as OpenSSH refuses such private keys.
fn read_private(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut file = fs::File::open(path)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = file.metadata()?.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                format!(
                    "mode {mode:04o} lets other users read or change the key; \
                     restrict it to its owner with `chmod 600 {}`",
                    path.display()
                ),
            ));
        }
    }
    let mut text = String::new();
    file.read_to_string(&mut text)?;
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_key_is_strong_private_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = Config::default().with(|c| c.db.data_dir = dir.path().join("nested"));
        let first = cfg.signing_key().unwrap();
        assert!(first.expose().len() >= 64);
        let second = cfg.signing_key().unwrap();
        assert_eq!(first, second, "the key must survive restarts");
        let path = dir.path().join("nested").join(GENERATED_KEY_FILE);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
        }
        let other = Config::default()
            .with(|c| c.db.data_dir = tempfile::tempdir().unwrap().path().to_owned());
        assert_ne!(other.signing_key().unwrap(), first, "keys must be random");
    }

    #[cfg(unix)]
    #[test]
    fn a_key_file_others_may_read_stops_startup() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let cfg = Config::default().with(|c| c.db.data_dir = dir.path().to_owned());
        let key = cfg.signing_key().unwrap();
        let path = dir.path().join(GENERATED_KEY_FILE);
        for mode in [0o640, 0o604, 0o620, 0o644] {
            fs::set_permissions(&path, fs::Permissions::from_mode(mode)).unwrap();
            let e = cfg.signing_key().unwrap_err();
            let text = e.to_string();
            assert!(
                matches!(&e, ConfigError::KeyFile { path: p, .. } if *p == path),
                "{text}"
            );
            assert!(text.contains(&path.display().to_string()), "{text}");
            assert!(text.contains(&format!("{mode:04o}")), "{text}");
            assert!(text.contains("chmod 600"), "{text}");
        }
        // Restricted again (or 0400), the same key is used.
        for mode in [0o600, 0o400] {
            fs::set_permissions(&path, fs::Permissions::from_mode(mode)).unwrap();
            assert_eq!(cfg.signing_key().unwrap(), key);
        }
    }

    #[test]
    fn configured_key_wins_over_generated_one() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = Config::default().with(|c| {
            c.db.data_dir = dir.path().to_owned();
            c.auth.secret_key = Some(Secret::new(vec![b'a'; 32]));
        });
        assert_eq!(cfg.signing_key().unwrap().expose(), &[b'a'; 32]);
        assert!(!dir.path().join(GENERATED_KEY_FILE).exists());
        let cfg = cfg.with(|c| c.auth.jwt_secret_key = Some(Secret::new(vec![b'b'; 33])));
        assert_eq!(cfg.signing_key().unwrap().expose(), &[b'b'; 33]);
    }
}
