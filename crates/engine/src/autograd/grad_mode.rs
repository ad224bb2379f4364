//! Thread-local grad mode (PyTorch's `GradMode`) and its RAII guards.

use std::cell::Cell;

thread_local! {
    static GRAD_ENABLED: Cell<bool> = const { Cell::new(true) };
}

/// Whether ops on this thread record autograd history.
pub fn is_grad_enabled() -> bool {
    GRAD_ENABLED.with(|g| g.get())
}

/// Switches recording on or off for this thread (prefer the guards).
pub fn set_grad_enabled(enabled: bool) {
    GRAD_ENABLED.with(|g| g.set(enabled));
}

/// Sets grad mode for its lifetime and restores the previous mode on drop.
#[must_use = "grad mode is restored as soon as the guard is dropped"]
pub struct GradModeGuard {
    previous: bool,
}

impl GradModeGuard {
    /// Sets grad mode to `enabled` until the guard drops.
    pub fn new(enabled: bool) -> Self {
        let previous = is_grad_enabled();
        set_grad_enabled(enabled);
        GradModeGuard { previous }
    }
}

impl Drop for GradModeGuard {
    fn drop(&mut self) {
        set_grad_enabled(self.previous);
    }
}

/// Disables recording until dropped (`with torch.no_grad():`).
pub fn no_grad() -> GradModeGuard {
    GradModeGuard::new(false)
}

/// Enables recording until dropped (`with torch.enable_grad():`).
pub fn enable_grad() -> GradModeGuard {
    GradModeGuard::new(true)
}
