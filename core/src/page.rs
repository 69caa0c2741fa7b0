//! Pagination of list queries. Every list is bounded: no query reads a whole table.

/// A window into a list: at most `limit` rows after skipping `offset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    limit: u32,
    offset: u32,
}

impl Page {
    pub const DEFAULT_LIMIT: u32 = 50;
    pub const MAX_LIMIT: u32 = 500;

    /// A page with `limit` clamped to `1..=MAX_LIMIT`.
    pub fn new(limit: u32, offset: u32) -> Self {
        Self {
            limit: limit.clamp(1, Self::MAX_LIMIT),
            offset,
        }
    }

    /// The page a request asks for: [`Page::DEFAULT_LIMIT`] rows from the start unless it
    /// says otherwise (every list route reads its `limit` and `offset` so).
    pub fn requested(limit: Option<u32>, offset: Option<u32>) -> Self {
        Self::new(limit.unwrap_or(Self::DEFAULT_LIMIT), offset.unwrap_or(0))
    }

    pub fn first(limit: u32) -> Self {
        Self::new(limit, 0)
    }

    pub fn limit(&self) -> u32 {
        self.limit
    }

    pub fn offset(&self) -> u32 {
        self.offset
    }
}

impl Default for Page {
    fn default() -> Self {
        Self::first(Self::DEFAULT_LIMIT)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_is_clamped() {
        assert_eq!(Page::new(0, 0).limit(), 1);
        assert_eq!(Page::new(10_000, 3).limit(), Page::MAX_LIMIT);
        assert_eq!(Page::new(10_000, 3).offset(), 3);
        assert_eq!(Page::default().limit(), Page::DEFAULT_LIMIT);
    }
}
