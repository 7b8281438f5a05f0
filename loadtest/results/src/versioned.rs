//! Loading and saving a versioned JSON file (a run's results, a bench): one place for the
//! schema-version check and the pretty JSON both write.

use std::path::Path;

use anyhow::{Context, Result, bail};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// A file format with a `schema_version` this build reads up to [`Versioned::READS_UP_TO`].
pub(crate) trait Versioned: Serialize + DeserializeOwned {
    /// What the file is, for messages ("results file", "bench file").
    const WHAT: &'static str;
    const READS_UP_TO: u32;
    fn schema_version(&self) -> u32;
}

/// Reads `path` (gzipped where its name ends in `.gz`), refusing a schema newer than this
/// build knows.
pub(crate) fn load<T: Versioned>(path: &Path) -> Result<T> {
    let text = read_text(path).with_context(|| format!("reading {}", path.display()))?;
    let value: T = serde_json::from_str(&text)
        .with_context(|| format!("parsing {} {}", T::WHAT, path.display()))?;
    if value.schema_version() > T::READS_UP_TO {
        bail!(
            "{} has schema_version {}, this loadtest reads {}s up to {}",
            path.display(),
            value.schema_version(),
            T::WHAT,
            T::READS_UP_TO
        );
    }
    Ok(value)
}

fn read_text(path: &Path) -> std::io::Result<String> {
    if path.extension().is_some_and(|e| e == "gz") {
        let mut text = String::new();
        std::io::Read::read_to_string(
            &mut flate2::read::GzDecoder::new(std::fs::File::open(path)?),
            &mut text,
        )?;
        Ok(text)
    } else {
        std::fs::read_to_string(path)
    }
}

/// Writes `value` as pretty JSON (creating parent folders).
pub(crate) fn save<T: Serialize>(value: &T, path: &Path) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let text = serde_json::to_string_pretty(value)?;
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use crate::RunResults;

    #[test]
    fn a_gzipped_results_file_reads_as_the_plain_one() {
        let plain = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../report/tests/fixtures/blocking-api-0.json");
        let zipped =
            std::env::temp_dir().join(format!("results-blocking-{}.json.gz", std::process::id()));
        let mut gz = flate2::write::GzEncoder::new(
            std::fs::File::create(&zipped).unwrap(),
            flate2::Compression::default(),
        );
        gz.write_all(&std::fs::read(&plain).unwrap()).unwrap();
        gz.finish().unwrap();
        let (a, b) = (RunResults::load(&plain), RunResults::load(&zipped));
        std::fs::remove_file(&zipped).unwrap();
        assert_eq!(a.unwrap(), b.unwrap());
    }
}
