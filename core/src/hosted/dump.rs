//! A copy of one hosted control plane's key space, taken at one etcd revision, and its
//! loading into a key space (the same or another's).
//!
//! Keys are kept relative to the key space's prefix (`namespaces/default`), so a
//! dump loads under any prefix: the new control plane's API server then serves the same
//! objects. The encoded form is gzip over `KQKS1\n`, the revision (8 bytes, big-endian), the
//! key count (4 bytes), then per key: key length (4 bytes), key, value length (4 bytes),
//! value. Values are what kube-apiserver wrote (protobuf or JSON): Secrets among them, so a
//! dump is kept sealed in KQueen's vault, never on disk as it is.

use std::collections::BTreeMap;
use std::io::{Read, Write};

use etcd_client::{GetOptions, SortOrder, SortTarget, Txn, TxnOp};
use flate2::read::GzDecoder;
use flate2::write::GzEncoder;

use super::etcd::{etcd, EtcdError, KeySpace, SharedEtcd};

const MAGIC: &[u8] = b"KQKS1\n";
/// The largest dump read back (decoded), like the resources archive's bound.
pub const MAX_DUMP_BYTES: usize = 256 << 20;

/// One key (relative to the prefix) and its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub key: Vec<u8>,
    pub value: Vec<u8>,
}

/// Every key of one key space at `revision`, sorted by key.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct KeySpaceDump {
    pub revision: i64,
    pub entries: Vec<Entry>,
}

/// What loading a dump changed in the key space it went into.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Loaded {
    /// Keys written (new, or with another value).
    pub written: u64,
    /// Keys already holding the dump's value.
    pub unchanged: u64,
    /// Keys the dump does not hold, removed.
    pub removed: u64,
}

fn unreadable(what: &str) -> EtcdError {
    EtcdError::Invalid(format!("not a KQueen key space dump: {what}"))
}

/// What is left to read of a decoded dump.
struct Cursor<'a>(&'a [u8]);

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], EtcdError> {
        if self.0.len() < n {
            return Err(unreadable("it ends too early"));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    /// A big-endian number of `n` bytes.
    fn number(&mut self, n: usize) -> Result<u64, EtcdError> {
        Ok(self
            .take(n)?
            .iter()
            .fold(0u64, |v, b| (v << 8) | u64::from(*b)))
    }
}

impl KeySpaceDump {
    /// Keys and values, in bytes.
    pub fn bytes(&self) -> u64 {
        self.entries
            .iter()
            .map(|e| (e.key.len() + e.value.len()) as u64)
            .sum()
    }

    /// The encoded, compressed dump.
    pub fn encode(&self) -> Vec<u8> {
        let mut raw = Vec::with_capacity(self.bytes() as usize + 8 * self.entries.len() + 32);
        raw.extend_from_slice(MAGIC);
        raw.extend_from_slice(&self.revision.to_be_bytes());
        raw.extend_from_slice(
            &u32::try_from(self.entries.len())
                .unwrap_or(u32::MAX)
                .to_be_bytes(),
        );
        for e in &self.entries {
            for part in [&e.key, &e.value] {
                raw.extend_from_slice(&u32::try_from(part.len()).unwrap_or(u32::MAX).to_be_bytes());
                raw.extend_from_slice(part);
            }
        }
        let mut gz = GzEncoder::new(Vec::new(), flate2::Compression::default());
        // Writing into a Vec cannot fail.
        let _ = gz.write_all(&raw);
        gz.finish().unwrap_or_default()
    }

    /// A dump [`KeySpaceDump::encode`] wrote; anything else (or more than
    /// [`MAX_DUMP_BYTES`]) is refused, never half read.
    pub fn decode(bytes: &[u8]) -> Result<Self, EtcdError> {
        let mut raw = Vec::new();
        GzDecoder::new(bytes)
            .take(MAX_DUMP_BYTES as u64 + 1)
            .read_to_end(&mut raw)
            .map_err(|e| unreadable(&e.to_string()))?;
        if raw.len() > MAX_DUMP_BYTES {
            return Err(unreadable("larger than 256 MiB"));
        }
        let at = raw
            .strip_prefix(MAGIC)
            .ok_or_else(|| unreadable("it does not start as one"))?;
        let mut cursor = Cursor(at);
        let revision = i64::try_from(cursor.number(8)?).map_err(|_| unreadable("bad revision"))?;
        let count = cursor.number(4)? as usize;
        let mut entries = Vec::with_capacity(count.min(1 << 16));
        for _ in 0..count {
            let key_len = cursor.number(4)? as usize;
            let key = cursor.take(key_len)?.to_vec();
            let value_len = cursor.number(4)? as usize;
            let value = cursor.take(value_len)?.to_vec();
            entries.push(Entry { key, value });
        }
        if !cursor.0.is_empty() {
            return Err(unreadable("bytes after its last key"));
        }
        Ok(Self { revision, entries })
    }

    /// One line per key, `<bytes>\t<key>`, for a person reading the backup's archive (the
    /// values are not in it).
    pub fn listing(&self) -> String {
        let mut out = String::new();
        for e in &self.entries {
            out.push_str(&format!(
                "{}\t{}\n",
                e.value.len(),
                String::from_utf8_lossy(&e.key).escape_debug()
            ));
        }
        out
    }
}

/// Keys read per request.
const PAGE: i64 = 500;
/// At most this many operations, and about this many bytes, per transaction (etcd's
/// defaults allow 128 operations and 1.5 MiB per request).
const TXN_OPS: usize = 100;
const TXN_BYTES: usize = 1 << 20;

impl SharedEtcd {
    /// Every key of `space` at one revision (the first page's), a page at a time. Connected
    /// as the key space's own user (its certificate's common name), etcd itself refuses to
    /// read any other range.
    pub async fn dump(&self, space: &KeySpace) -> Result<KeySpaceDump, EtcdError> {
        let prefix = space.prefix().into_bytes();
        let end = crate::vault::range_end(&prefix);
        let mut from = prefix.clone();
        let mut dump = KeySpaceDump::default();
        let mut size = 0usize;
        loop {
            let mut options = GetOptions::new()
                .with_range(end.clone())
                .with_limit(PAGE)
                .with_sort(SortTarget::Key, SortOrder::Ascend);
            if dump.revision > 0 {
                options = options.with_revision(dump.revision);
            }
            let page = self
                .client()
                .get(from.clone(), Some(options))
                .await
                .map_err(etcd)?;
            if dump.revision == 0 {
                dump.revision = page.header().map_or(0, |h| h.revision());
            }
            for kv in page.kvs() {
                let Some(key) = kv.key().strip_prefix(prefix.as_slice()) else {
                    continue;
                };
                size += key.len() + kv.value().len();
                if size > MAX_DUMP_BYTES {
                    return Err(EtcdError::Invalid(format!(
                        "the key space holds more than {} MiB",
                        MAX_DUMP_BYTES >> 20
                    )));
                }
                dump.entries.push(Entry {
                    key: key.to_vec(),
                    value: kv.value().to_vec(),
                });
            }
            match page.kvs().last() {
                Some(last) if page.more() => {
                    from = last.key().to_vec();
                    from.push(0);
                }
                _ => return Ok(dump),
            }
        }
    }

    /// Makes `space` hold exactly `dump`'s keys: writes the keys that are new or differ,
    /// removes those the dump does not hold, leaves the rest. Its API server is read-only
    /// meanwhile and gets back the write access it had. The key space must be open.
    pub async fn load(&self, space: &KeySpace, dump: &KeySpaceDump) -> Result<Loaded, EtcdError> {
        let Some(was_writable) = self.writable(space).await? else {
            return Err(EtcdError::Invalid(format!(
                "the key space {} is not open in the shared etcd",
                space.prefix()
            )));
        };
        self.set_writable(space, false).await?;
        let loaded = self.replace(space, dump).await;
        let back = if was_writable {
            self.set_writable(space, true).await
        } else {
            Ok(())
        };
        let loaded = loaded?;
        back?;
        Ok(loaded)
    }

    async fn replace(&self, space: &KeySpace, dump: &KeySpaceDump) -> Result<Loaded, EtcdError> {
        let prefix = space.prefix().into_bytes();
        let current = self.dump(space).await?;
        let (ops, counts) = {
            let changes = dump.changes_from(&current);
            let mut ops: Vec<(usize, TxnOp)> =
                Vec::with_capacity(changes.puts.len() + changes.removes.len());
            for e in &changes.puts {
                let key = [prefix.as_slice(), &e.key].concat();
                ops.push((
                    key.len() + e.value.len(),
                    TxnOp::put(key, e.value.clone(), None),
                ));
            }
            for k in &changes.removes {
                let key = [prefix.as_slice(), k].concat();
                ops.push((key.len(), TxnOp::delete(key, None)));
            }
            (ops, changes.counts())
        };
        let mut batch = Vec::new();
        let mut bytes = 0;
        for (size, op) in ops {
            if !batch.is_empty() && (batch.len() >= TXN_OPS || bytes + size > TXN_BYTES) {
                self.commit(std::mem::take(&mut batch)).await?;
                bytes = 0;
            }
            batch.push(op);
            bytes += size;
        }
        if !batch.is_empty() {
            self.commit(batch).await?;
        }
        Ok(counts)
    }

    async fn commit(&self, batch: Vec<TxnOp>) -> Result<(), EtcdError> {
        self.client()
            .txn(Txn::new().and_then(batch))
            .await
            .map_err(etcd)?;
        Ok(())
    }
}

/// What loading a dump over a key space's current keys changes.
#[derive(Debug, PartialEq, Eq)]
pub struct Changes<'a> {
    /// Keys new or with another value.
    pub puts: Vec<&'a Entry>,
    /// Keys the dump does not hold.
    pub removes: Vec<&'a [u8]>,
    pub unchanged: u64,
}

impl Changes<'_> {
    pub fn counts(&self) -> Loaded {
        Loaded {
            written: self.puts.len() as u64,
            unchanged: self.unchanged,
            removed: self.removes.len() as u64,
        }
    }
}

impl KeySpaceDump {
    /// What loading this dump over `current` (the key space as it is) changes.
    pub fn changes_from<'a>(&'a self, current: &'a KeySpaceDump) -> Changes<'a> {
        let now: BTreeMap<&[u8], &[u8]> = current
            .entries
            .iter()
            .map(|e| (e.key.as_slice(), e.value.as_slice()))
            .collect();
        let mut changes = Changes {
            puts: Vec::new(),
            removes: Vec::new(),
            unchanged: 0,
        };
        let mut kept = std::collections::BTreeSet::new();
        for e in &self.entries {
            kept.insert(e.key.as_slice());
            match now.get(e.key.as_slice()) {
                Some(value) if *value == e.value.as_slice() => changes.unchanged += 1,
                _ => changes.puts.push(e),
            }
        }
        changes.removes = now.into_keys().filter(|k| !kept.contains(k)).collect();
        changes
    }

    /// The namespaces the dump holds (`namespaces/<name>`), sorted.
    pub fn namespaces(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .entries
            .iter()
            .filter_map(|e| e.key.strip_prefix(b"namespaces/".as_slice()))
            .filter_map(|name| std::str::from_utf8(name).ok())
            .map(str::to_owned)
            .collect();
        names.sort();
        names
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn sample() -> KeySpaceDump {
        KeySpaceDump {
            revision: 4242,
            entries: vec![
                Entry {
                    key: b"namespaces/default".to_vec(),
                    value: b"k8s\0\x0a\x0fbinary".to_vec(),
                },
                Entry {
                    key: b"configmaps/a/b".to_vec(),
                    value: Vec::new(),
                },
            ],
        }
    }

    #[test]
    fn a_dump_reads_back_as_written() {
        let dump = sample();
        let encoded = dump.encode();
        assert_eq!(KeySpaceDump::decode(&encoded).unwrap(), dump);
        assert_eq!(dump.bytes(), 18 + 12 + 14);
        assert_eq!(
            dump.listing(),
            "12\tnamespaces/default\n0\tconfigmaps/a/b\n"
        );
        let empty = KeySpaceDump::default();
        assert_eq!(KeySpaceDump::decode(&empty.encode()).unwrap(), empty);
    }

    #[test]
    fn anything_else_is_refused_whole() {
        let gz = |raw: &[u8]| {
            let mut gz = GzEncoder::new(Vec::new(), flate2::Compression::default());
            gz.write_all(raw).unwrap();
            gz.finish().unwrap()
        };
        let mut raw = Vec::new();
        GzDecoder::new(sample().encode().as_slice())
            .read_to_end(&mut raw)
            .unwrap();
        for (bad, why) in [
            (b"plain text".to_vec(), "not gzip"),
            (gz(b"KQKS2\n"), "other magic"),
            (gz(&raw[..raw.len() - 3]), "cut short"),
            (gz(&[raw.as_slice(), b"x"].concat()), "trailing bytes"),
        ] {
            assert!(KeySpaceDump::decode(&bad).is_err(), "{why}");
        }
        // A count promising more keys than there are.
        let mut lying = raw.clone();
        lying[MAGIC.len() + 8 + 3] = 9;
        assert!(KeySpaceDump::decode(&gz(&lying)).is_err());
    }

    #[test]
    fn loading_writes_what_differs_and_removes_what_the_dump_lacks() {
        let entry = |k: &str, v: &str| Entry {
            key: k.as_bytes().to_vec(),
            value: v.as_bytes().to_vec(),
        };
        let dump = KeySpaceDump {
            revision: 9,
            entries: vec![
                entry("namespaces/shop", "a"),
                entry("namespaces/default", "b"),
                entry("configmaps/shop/c", "v1"),
            ],
        };
        let current = KeySpaceDump {
            revision: 40,
            entries: vec![
                entry("namespaces/default", "b"),
                entry("configmaps/shop/c", "v2"),
                entry("namespaces/only-here", "x"),
            ],
        };
        let changes = dump.changes_from(&current);
        let put: Vec<&[u8]> = changes.puts.iter().map(|e| e.key.as_slice()).collect();
        assert_eq!(put, [b"namespaces/shop".as_slice(), b"configmaps/shop/c"]);
        assert_eq!(changes.removes, [b"namespaces/only-here".as_slice()]);
        assert_eq!(
            changes.counts(),
            Loaded {
                written: 2,
                unchanged: 1,
                removed: 1
            }
        );
        assert_eq!(dump.namespaces(), ["default", "shop"]);
        assert_eq!(dump.changes_from(&dump).counts().unchanged, 3);
    }
}
