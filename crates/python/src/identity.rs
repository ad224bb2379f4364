//! One Python object per engine object while it lives: `y.grad_fn is y.grad_fn`,
//! `z.grad_fn.next_functions[0][0] is y.grad_fn`, `acc.variable is x`. See
//! Note [Python object identity].
//!
//! A table maps an engine key (a `NodeId`, or a `Variable`'s identity) to a weak
//! reference to the Python object made for it. The engine stays Python-free, and the
//! table never keeps an object alive. The table's mutex is never held while Python code
//! can run: entries are cloned out under the lock and upgraded after it is released;
//! removed weak references are dropped after it is released.

use pyo3::prelude::*;
use pyo3::types::{PyWeakrefMethods, PyWeakrefReference};
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Mutex, MutexGuard};

/// Weak references to the live Python objects of engine objects keyed by `K`.
pub struct ObjectTable<K> {
    map: Mutex<Option<HashMap<K, Py<PyWeakrefReference>>>>,
}

impl<K: Eq + Hash + Copy> ObjectTable<K> {
    /// An empty table (usable in a `static`).
    pub const fn new() -> Self {
        ObjectTable {
            map: Mutex::new(None),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Option<HashMap<K, Py<PyWeakrefReference>>>> {
        // Each update is one map operation: a poisoned lock still holds a valid map.
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The live object registered for `key`, if any.
    pub fn get<'py>(&self, py: Python<'py>, key: K) -> Option<Bound<'py, PyAny>> {
        let weak = self.lock().as_ref()?.get(&key).map(|w| w.clone_ref(py))?;
        weak.bind(py).upgrade()
    }

    /// Registers `obj` as the object of `key` (replacing any earlier entry).
    pub fn insert(&self, key: K, obj: &Bound<'_, PyAny>) -> PyResult<()> {
        let weak = PyWeakrefReference::new(obj)?.unbind();
        let old = self
            .lock()
            .get_or_insert_with(HashMap::new)
            .insert(key, weak);
        drop(old);
        Ok(())
    }

    /// Forgets `key` (its object is being destroyed).
    pub fn remove(&self, key: K) {
        let old = self.lock().as_mut().and_then(|m| m.remove(&key));
        drop(old);
    }

    /// Forgets `key` if its registered object is gone (called while an object of `key` is
    /// destroyed, which reads as gone: another live object registered for `key` since,
    /// by `register` on a second handle of the same variable, is kept).
    pub fn remove_if_dead(&self, py: Python<'_>, key: K) {
        let (old, live) = {
            let mut guard = self.lock();
            let Some(map) = guard.as_mut() else {
                return;
            };
            match map.get(&key).and_then(|w| w.bind(py).upgrade()) {
                Some(live) => (None, Some(live)),
                None => (map.remove(&key), None),
            }
        };
        // Dropped after unlocking: dropping the last reference may run Python code.
        drop((old, live));
    }
}
