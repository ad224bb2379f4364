//! Thread-local grad mode (PyTorch's `GradMode`) and inference mode (PyTorch's
//! `InferenceMode`), with their RAII guards. See Note [Inference mode].

use std::cell::Cell;

thread_local! {
    static GRAD_ENABLED: Cell<bool> = const { Cell::new(true) };
    static INFERENCE_ENABLED: Cell<bool> = const { Cell::new(false) };
}

/// Whether ops on this thread record autograd history.
pub fn is_grad_enabled() -> bool {
    GRAD_ENABLED.with(|g| g.get())
}

/// Switches recording on or off for this thread (prefer the guards).
pub fn set_grad_enabled(enabled: bool) {
    GRAD_ENABLED.with(|g| g.set(enabled));
}

/// Whether inference mode is on for this thread: nothing records (even under
/// `enable_grad`), and tensors made now are inference tensors.
pub fn is_inference_mode_enabled() -> bool {
    INFERENCE_ENABLED.with(|g| g.get())
}

/// Sets inference mode for this thread, and grad mode to its opposite, as PyTorch's
/// `InferenceMode(enabled)` does (so `inference_mode(False)` turns grad mode on). Prefer
/// [`InferenceModeGuard`], which restores both.
pub fn set_inference_mode(enabled: bool) {
    INFERENCE_ENABLED.with(|g| g.set(enabled));
    set_grad_enabled(!enabled);
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

/// Sets inference mode (and grad mode to its opposite) for its lifetime and restores
/// both on drop (`with torch.inference_mode(enabled):`).
#[must_use = "inference mode is restored as soon as the guard is dropped"]
pub struct InferenceModeGuard {
    previous_inference: bool,
    previous_grad: bool,
}

impl InferenceModeGuard {
    /// Sets inference mode to `enabled` until the guard drops.
    pub fn new(enabled: bool) -> Self {
        let guard = InferenceModeGuard {
            previous_inference: is_inference_mode_enabled(),
            previous_grad: is_grad_enabled(),
        };
        set_inference_mode(enabled);
        guard
    }
}

impl Drop for InferenceModeGuard {
    fn drop(&mut self) {
        INFERENCE_ENABLED.with(|g| g.set(self.previous_inference));
        set_grad_enabled(self.previous_grad);
    }
}

/// Turns inference mode on until dropped (`with torch.inference_mode():`).
pub fn inference_mode() -> InferenceModeGuard {
    InferenceModeGuard::new(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inference_guard_disables_grad_and_restores_both() {
        assert!(!is_inference_mode_enabled() && is_grad_enabled());
        {
            let _g = inference_mode();
            assert!(is_inference_mode_enabled() && !is_grad_enabled());
            {
                let _e = enable_grad();
                assert!(is_inference_mode_enabled() && is_grad_enabled());
            }
            {
                let _off = InferenceModeGuard::new(false);
                assert!(!is_inference_mode_enabled() && is_grad_enabled());
            }
            assert!(is_inference_mode_enabled() && !is_grad_enabled());
        }
        assert!(!is_inference_mode_enabled() && is_grad_enabled());
        let _n = no_grad();
        {
            let _g = inference_mode();
        }
        assert!(!is_grad_enabled() && !is_inference_mode_enabled());
    }
}
