//! A fence around third-party decoders (arrow-ipc, parquet) reading input.
//!
//! Those crates assert on inconsistent files in places no pre-check can
//! cover (a validity bitmap shorter than its array, a buffer that does not
//! fit a type), so each call that decodes input runs inside [`guard`]: a
//! panic there becomes a parse error naming what was being read, the
//! process and the import go on, and nothing is published. The panic hook
//! stays quiet for panics inside a guard (they are answered as errors) and
//! reports every other panic as before — flameox's own bugs are not hidden.

use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Once;

use crate::api::ExtractError;

thread_local! {
    /// Set while this thread runs inside [`guard`].
    static GUARDED: Cell<bool> = const { Cell::new(false) };
}

/// Installs (once) the hook that skips guarded panics.
fn quiet_hook_for_guarded_panics() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !GUARDED.with(Cell::get) {
                previous(info);
            }
        }));
    });
}

/// Runs `decode`; a panic in it is `ExtractError::Parse` about `what`.
pub fn guard<T>(what: &str, decode: impl FnOnce() -> T) -> Result<T, ExtractError> {
    quiet_hook_for_guarded_panics();
    let outer = GUARDED.with(|g| g.replace(true));
    let result = catch_unwind(AssertUnwindSafe(decode));
    GUARDED.with(|g| g.set(outer));
    result.map_err(|panic| {
        let detail = panic
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| panic.downcast_ref::<&str>().copied())
            .unwrap_or("the decoder stopped");
        ExtractError::Parse {
            message: format!("{what} is corrupt: {detail}"),
            offset: None,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_decoder_panic_is_a_parse_error_and_the_flag_is_restored() {
        let r: Result<(), _> = guard("the table file X", || panic!("slice out of range"));
        match r {
            Err(ExtractError::Parse { message, .. }) => {
                assert!(
                    message.contains("X is corrupt: slice out of range"),
                    "{message}"
                )
            }
            other => panic!("{other:?}"),
        }
        assert!(!GUARDED.with(Cell::get));
        assert_eq!(guard("y", || 7).ok(), Some(7));
    }
}
