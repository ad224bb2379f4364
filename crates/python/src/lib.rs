//! Python bindings (placeholder while the engine lands).
