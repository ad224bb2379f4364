//! Saved tensors (PyTorch's `SavedVariable`): a tensor kept for backward together with
//! the version of its storage at save time (Note [Version counters]), or what a
//! saved-tensor pack hook made of it (Note [Saved tensor hooks]).

use super::grad_mode;
use super::graph::{self, EdgeSource, NodeId, NodeRef};
use super::value::Value;
use crate::error::{Error, Result};
use smallvec::SmallVec;
use std::any::Any;
use std::cell::RefCell;
use std::sync::Arc;

/// What a pack hook made of a saved tensor (PyTorch's packed object): opaque to the
/// engine, which only asks for the tensor back when backward needs it.
pub trait PackedTensor<V>: Send + Sync {
    /// The tensor, from the unpack hook.
    fn unpack(&self) -> Result<V>;
    /// The bytes the packed object keeps alive (for `graph_stats`): a handle that
    /// recomputes the tensor holds none of its elements.
    fn nbytes(&self) -> usize;
}

/// A pair of saved-tensor hooks (`saved_tensors_hooks(pack, unpack)`): `pack` runs when
/// an op saves a tensor, and returns the object whose `unpack` gives it back.
pub trait SavedTensorHooks<V>: Send + Sync {
    /// Packs `value` (called with grad mode off, as PyTorch does).
    fn pack(&self, value: &V) -> Result<Arc<dyn PackedTensor<V>>>;
}

thread_local! {
    /// The saved-tensor hooks registered on this thread, innermost last. Each entry is
    /// an `Arc<dyn SavedTensorHooks<V>>` for the graph's value type `V`.
    static HOOKS: RefCell<Vec<Box<dyn Any>>> = const { RefCell::new(Vec::new()) };
    /// An error raised while saving (a pack hook's, or a refused save), which the op
    /// could not return: its caller takes it with [`take_deferred_error`].
    static DEFERRED: RefCell<Option<Error>> = const { RefCell::new(None) };
}

/// Registers saved-tensor hooks on this thread until the matching
/// [`pop_saved_tensors_hooks`]; the innermost pair packs.
pub fn push_saved_tensors_hooks<V: Value>(hooks: Arc<dyn SavedTensorHooks<V>>) {
    HOOKS.with(|h| h.borrow_mut().push(Box::new(hooks)));
}

/// Removes the innermost saved-tensor hooks of this thread.
pub fn pop_saved_tensors_hooks() {
    HOOKS.with(|h| h.borrow_mut().pop());
}

/// The innermost hooks of this thread, if any.
fn current_hooks<V: Value>() -> Option<Arc<dyn SavedTensorHooks<V>>> {
    HOOKS.with(|h| {
        h.borrow()
            .last()
            .and_then(|b| b.downcast_ref::<Arc<dyn SavedTensorHooks<V>>>().cloned())
    })
}

/// Records an error met while saving, for the op's caller (the first one wins).
pub(crate) fn defer_error(err: Error) {
    DEFERRED.with(|d| {
        let mut d = d.borrow_mut();
        if d.is_none() {
            *d = Some(err);
        }
    });
}

/// The error met while saving by the last op on this thread, if any (and clears it).
/// Ops build their node in a function that cannot fail, so a pack hook's error or a
/// refused save waits here; the Python binding raises it from the op. See Note
/// [Saved tensor hooks].
pub fn take_deferred_error() -> Option<Error> {
    DEFERRED.with(|d| d.borrow_mut().take())
}

/// Whether an error is waiting for [`take_deferred_error`].
pub(crate) fn has_deferred_error() -> bool {
    DEFERRED.with(|d| d.borrow().is_some())
}

/// What a saved slot holds.
enum Stored<V: Value> {
    /// The tensor itself (version-checked when unpacked).
    Plain(V),
    /// A leaf that requires grad: its data without history, and the leaf itself held
    /// weakly. Unpacking gives the leaf while it lives (so higher derivatives reach it
    /// and `_saved_self is x`), else the data. See Note [The graph does not own leaves].
    Leaf(V, V::Weak),
    /// A pack hook's object and the bytes it keeps alive; no version check, as in
    /// PyTorch. A leaf input is also held weakly: unpacking gives the hook's data the
    /// leaf's gradient edge (see [`SavedTensor::unpack`]).
    Packed(Arc<dyn PackedTensor<V>>, usize, Option<V::Weak>),
}

impl<V: Value> Clone for Stored<V> {
    fn clone(&self) -> Self {
        match self {
            Stored::Plain(v) => Stored::Plain(v.clone()),
            Stored::Leaf(v, w) => Stored::Leaf(v.clone(), w.clone()),
            Stored::Packed(p, n, l) => Stored::Packed(p.clone(), *n, l.clone()),
        }
    }
}

/// Saved-tensor slots of a node: `None` where the rule will not need it.
pub(crate) type SavedSlots<V> = SmallVec<[Option<SavedTensor<V>>; 2]>;

/// A node's saved tensors as the scheduler hands them to its rule, not yet unpacked:
/// [`Saved::unpack`] checks each against in-place writes (and runs unpack hooks). Rules
/// unpack all of them before they run; a custom Function's rule defers that to the
/// moment its backward reads them, as PyTorch's `ctx.saved_tensors` does.
pub struct Saved<'a, V: Value> {
    pub(crate) slots: &'a [Option<SavedTensor<V>>],
    pub(crate) owner: NodeId<V>,
}

impl<V: Value> Saved<'_, V> {
    /// Every saved value (`None` for an empty slot), or the first slot's error: a
    /// tensor modified in place since it was saved, or an unpack hook's failure.
    pub fn unpack(&self) -> Result<SmallVec<[Option<V>; 3]>> {
        self.slots
            .iter()
            .map(|s| s.as_ref().map(|s| s.unpack(self.owner)).transpose())
            .collect()
    }
}

/// The node that produced a saved tensor.
enum Origin<V> {
    /// An input's grad_fn.
    Node(NodeId<V>),
    /// The saving op itself (a saved output).
    Named(&'static str),
}

impl<V> Clone for Origin<V> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<V> Copy for Origin<V> {}

/// A tensor saved for backward.
#[derive(Clone)]
pub(crate) struct SavedTensor<V: Value> {
    stored: Stored<V>,
    saved_version: u64,
    /// `(grad_fn, output_nr)` of the saved variable when it was saved, for the error
    /// message. The name is looked up only when the error is raised: saving runs on
    /// every recorded op, the error almost never. The node stays alive while the saving
    /// node has an edge to it, i.e. whenever this can be unpacked.
    origin: Option<(Origin<V>, u32)>,
    /// Which output of the node that saved it this is, if it is one. See Note [Saved
    /// outputs].
    output_nr: Option<u32>,
}

impl<V: Value> SavedTensor<V> {
    /// Saves an input of the op (keeps its history, for double backward).
    pub fn input(variable: &V) -> SavedTensor<V> {
        let history = variable.history();
        let stored = match history {
            None if variable.needs_grad() => {
                Stored::Leaf(variable.detached(), variable.downgrade())
            }
            None => Stored::Plain(variable.clone()),
            Some(_) => Stored::Plain(variable.for_saving()),
        };
        SavedTensor {
            stored,
            saved_version: variable.data().version(),
            origin: history.map(|(id, nr)| (Origin::Node(id), nr)),
            output_nr: None,
        }
        .packed(variable)
    }

    /// Runs the thread's pack hook, if any, on `variable`. Its error is deferred (see [`take_deferred_error`])
    /// and the tensor is kept as is.
    fn packed(mut self, variable: &V) -> SavedTensor<V> {
        let Some(hooks) = current_hooks::<V>() else {
            return self;
        };
        if variable.data().is_wrapped_number() {
            // PyTorch's SavedVariable keeps a wrapped number (`x * 2.5` saves 2.5) as it
            // is, without the hooks (Note [Wrapped scalars]).
            return self;
        }
        if has_deferred_error() {
            return self;
        }
        let _no_grad = grad_mode::no_grad();
        match hooks.pack(variable) {
            Ok(packed) => {
                let bytes = packed.nbytes();
                let leaf = match &self.stored {
                    Stored::Leaf(_, leaf) => Some(leaf.clone()),
                    _ => None,
                };
                self.stored = Stored::Packed(packed, bytes, leaf);
            }
            Err(e) => defer_error(e),
        }
        self
    }

    /// Saves the op's own output. It is stored without its `grad_fn`: the node would
    /// otherwise own a reference to itself.
    pub fn output(output: &V, op_name: &'static str) -> SavedTensor<V> {
        SavedTensor::output_nr(output, op_name, 0)
    }

    /// Saves output `output_nr` of a multi-output op, as [`SavedTensor::output`].
    pub fn output_nr(output: &V, op_name: &'static str, output_nr: u32) -> SavedTensor<V> {
        let data = output.data();
        let alias = V::from_data(data.clone());
        let saved = SavedTensor {
            saved_version: data.version(),
            stored: Stored::Plain(alias.clone()),
            origin: Some((Origin::Named(op_name), output_nr)),
            output_nr: Some(output_nr),
        };
        // The pack hook sees the output without its grad_fn: whatever it returns is
        // kept by the node, and the output itself would be a node → output → node
        // cycle (Note [Saved outputs]).
        saved.packed(&alias)
    }

    /// The saved variable as it was stored (no version check); `None` when packed.
    pub(crate) fn variable(&self) -> Option<&V> {
        match &self.stored {
            Stored::Plain(v) | Stored::Leaf(v, _) => Some(v),
            Stored::Packed(..) => None,
        }
    }

    /// If this is a saved output, makes it `to`'s data at its current version and returns
    /// the value it held (see [`graph::rebind_saved_outputs`]).
    /// A packed output is left alone: the pack hook owns what was saved.
    pub fn rebind_output(&mut self, to: &V) -> Option<V> {
        self.output_nr?;
        let Stored::Plain(variable) = &mut self.stored else {
            return None;
        };
        let data = to.data();
        self.saved_version = data.version();
        let new = V::from_data(data.clone());
        drop(data);
        Some(std::mem::replace(variable, new))
    }

    /// This plain saved tensor packed now by `hooks` (PyTorch's
    /// `SavedTensor.register_hooks`); a tensor already packed refuses a second pair.
    pub(crate) fn with_hooks(&self, hooks: &dyn SavedTensorHooks<V>) -> Result<SavedTensor<V>> {
        let (leaf, variable) = match &self.stored {
            Stored::Plain(v) => (None, v),
            Stored::Leaf(v, leaf) => (Some(leaf.clone()), v),
            Stored::Packed(..) => {
                return Err(Error::InvalidArgument(
                    "Calling register_hooks on a saved tensor whose hooks have already been set. \
                 Hint: only one pair of hooks is allowed at a time."
                        .into(),
                ));
            }
        };
        let packed = {
            let _no_grad = grad_mode::no_grad();
            hooks.pack(variable)?
        };
        let bytes = packed.nbytes();
        Ok(SavedTensor {
            stored: Stored::Packed(packed, bytes, leaf),
            saved_version: self.saved_version,
            origin: self.origin,
            output_nr: self.output_nr,
        })
    }

    /// The bytes of the saved tensor's elements (numel × element size), for graph
    /// statistics (`graph_stats`, `viz.to_dot`).
    pub fn nbytes(&self) -> usize {
        match &self.stored {
            Stored::Plain(v) | Stored::Leaf(v, _) => {
                let t = v.data();
                t.numel() * t.dtype().size_in_bytes()
            }
            Stored::Packed(_, bytes, _) => *bytes,
        }
    }

    /// What an unpack hook returned, given the saved variable's history as PyTorch's
    /// `SavedVariable::unpack` does: a saved output its node's (under grad mode, as a
    /// plain one), a saved input its grad_fn, a leaf input its gradient edge (the
    /// leaf's AccumulateGrad), so higher derivatives flow through a packed slot (a
    /// `checkpoint` recomputation, a hook that detaches). A value that already has
    /// history or requires grad (a hook that kept the tensor) is returned as is.
    fn reattached(&self, value: V, leaf: Option<&V::Weak>, owner: NodeId<V>) -> V {
        if let Some(nr) = self.output_nr {
            if grad_mode::is_grad_enabled() {
                if let Some(node) = NodeRef::upgrade(owner) {
                    return V::with_history(value.data().clone(), node, nr);
                }
            }
            return value;
        }
        if value.needs_grad() || value.history().is_some() {
            return value;
        }
        if let Some((Origin::Node(id), nr)) = self.origin {
            return match NodeRef::upgrade(id) {
                Some(node) => V::with_history(value.data().clone(), node, nr),
                None => value,
            };
        }
        let edge = leaf.and_then(V::upgrade).and_then(|l| l.gradient_edge());
        let (node, nr) = match edge {
            Some(EdgeSource::Owned(node)) => (Some(node), 0),
            Some(EdgeSource::Borrowed(e)) => (NodeRef::upgrade(e.node), e.input_nr),
            None => (None, 0),
        };
        match node {
            Some(node) => V::with_history(value.data().clone(), node, nr),
            None => value,
        }
    }

    /// The saved variable, if it was not modified in place since it was saved. `owner`
    /// is the node that saved it: when backward is itself recorded (`create_graph`), a
    /// saved output gets its history back so second derivatives flow through it.
    pub fn unpack(&self, owner: NodeId<V>) -> Result<V> {
        let alive;
        let variable = match &self.stored {
            Stored::Plain(v) => v,
            // The leaf itself while it lives (it may have been given new data with
            // `x.data = ...`, which backward then reads, as PyTorch's); else its data.
            Stored::Leaf(v, leaf) => match V::upgrade(leaf) {
                Some(leaf) => {
                    alive = leaf;
                    &alive
                }
                None => v,
            },
            Stored::Packed(packed, _, leaf) => {
                let value = packed.unpack()?;
                return Ok(self.reattached(value, leaf.as_ref(), owner));
            }
        };
        let tensor = variable.data();
        let version = tensor.version();
        if version != self.saved_version {
            let name = self.origin.and_then(|(origin, nr)| match origin {
                Origin::Node(id) => graph::node_name(id).ok().map(|n| (n, nr)),
                Origin::Named(n) => Some((n, nr)),
            });
            let origin = match name {
                Some((name, nr)) => format!(", which is output {nr} of {name}"),
                None => String::new(),
            };
            let site = match tensor.version_counter().last_write_site() {
                Some(s) => format!(" The last in-place write to it happened at {s}."),
                None => String::new(),
            };
            return Err(Error::ModifiedByInplace {
                type_name: tensor.dtype().legacy_type_name(),
                shape: tensor.shape().to_vec(),
                origin,
                version,
                expected: self.saved_version,
                site,
            });
        }
        if let (Some(nr), true) = (self.output_nr, grad_mode::is_grad_enabled()) {
            if let Some(node) = NodeRef::upgrade(owner) {
                return Ok(V::with_history(tensor.clone(), node, nr));
            }
        }
        Ok(variable.clone())
    }
}
