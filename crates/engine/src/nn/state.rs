//! State dicts: walking a module tree by dotted names, `state_dict` and
//! `load_state_dict` with the Python package's rules and messages.

use super::{Member, Members, Module};
use crate::error::{Error, Result};
use crate::tensor::Tensor;
use crate::variable::Variable;
use std::collections::{BTreeMap, BTreeSet};

/// Named tensors in insertion order: a module's parameters and buffers
/// (`OrderedDict[str, Tensor]` in PyTorch).
#[derive(Clone, Debug, Default)]
pub struct StateDict {
    entries: Vec<(String, Tensor)>,
    /// Position of each name in `entries`.
    index: BTreeMap<String, usize>,
}

impl StateDict {
    /// An empty state dict.
    pub fn new() -> StateDict {
        StateDict::default()
    }

    /// Sets `name` to `tensor`: replaces an existing entry in place, else appends.
    pub fn insert(&mut self, name: impl Into<String>, tensor: Tensor) {
        let name = name.into();
        match self.index.get(&name) {
            Some(&i) => self.entries[i].1 = tensor,
            None => {
                self.index.insert(name.clone(), self.entries.len());
                self.entries.push((name, tensor));
            }
        }
    }

    /// Removes and returns the entry `name` (the others keep their order).
    pub fn remove(&mut self, name: &str) -> Option<Tensor> {
        let i = self.index.remove(name)?;
        let (_, tensor) = self.entries.remove(i);
        for position in self.index.values_mut() {
            if *position > i {
                *position -= 1;
            }
        }
        Some(tensor)
    }

    /// The tensor under `name`.
    pub fn get(&self, name: &str) -> Option<&Tensor> {
        self.index.get(name).map(|&i| &self.entries[i].1)
    }

    /// The names, in order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|(n, _)| n.as_str())
    }

    /// `(name, tensor)` pairs, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Tensor)> {
        self.entries.iter().map(|(n, t)| (n.as_str(), t))
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl FromIterator<(String, Tensor)> for StateDict {
    fn from_iter<I: IntoIterator<Item = (String, Tensor)>>(iter: I) -> StateDict {
        let mut out = StateDict::new();
        for (name, tensor) in iter {
            out.insert(name, tensor);
        }
        out
    }
}

/// What a non-strict `load_state_dict` skipped (`_IncompatibleKeys`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IncompatibleKeys {
    /// The module's keys that the state dict lacks.
    pub missing_keys: Vec<String>,
    /// The state dict's keys that the module does not have.
    pub unexpected_keys: Vec<String>,
}

/// A module's own entries, split by kind, in registration order.
struct Own<'a> {
    params: Vec<(String, &'a Variable)>,
    buffers: Vec<(String, &'a Variable, bool)>,
    children: Vec<(String, &'a dyn Module)>,
}

fn own<M: Members + ?Sized>(module: &M) -> Own<'_> {
    let mut own = Own {
        params: Vec::new(),
        buffers: Vec::new(),
        children: Vec::new(),
    };
    module.visit_members(&mut |name, member| match member {
        Member::Parameter(p) => own.params.push((name.to_string(), p)),
        Member::Buffer(b) => own.buffers.push((name.to_string(), b, false)),
        Member::OptionalBuffer(b) => own.buffers.push((name.to_string(), b, true)),
        Member::Child(c) => own.children.push((name.to_string(), c)),
    });
    own
}

/// Calls `f(prefix, name, member)` for every parameter and buffer of the tree, each
/// module's own first and then its submodules' in pre-order (PyTorch's
/// `named_parameters` / `named_buffers` order); `prefix` ends with `.` below the root.
pub(super) fn walk<M: Members + ?Sized>(
    module: &M,
    prefix: &str,
    f: &mut dyn FnMut(&str, &str, Member<'_>),
) {
    let own = own(module);
    for (name, p) in &own.params {
        f(prefix, name, Member::Parameter(p));
    }
    for (name, b, optional) in &own.buffers {
        let member = if *optional {
            Member::OptionalBuffer(b)
        } else {
            Member::Buffer(b)
        };
        f(prefix, name, member);
    }
    for (name, child) in &own.children {
        walk(*child, &format!("{prefix}{name}."), f);
    }
}

/// `module.state_dict()`: parameters then buffers of each module, pre-order.
pub(super) fn state_dict<M: Members + ?Sized>(module: &M) -> StateDict {
    let mut out = StateDict::new();
    walk(module, "", &mut |prefix, name, member| match member {
        Member::Parameter(v) | Member::Buffer(v) | Member::OptionalBuffer(v) => {
            out.insert(format!("{prefix}{name}"), v.tensor().clone());
        }
        Member::Child(_) => {}
    });
    out
}

/// `torch.Size([2, 3])`, as the messages print shapes.
fn size(shape: &[usize]) -> String {
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    format!("torch.Size([{}])", dims.join(", "))
}

/// The checks of one module (`Module._check_state_dict` in the Python package).
struct Check<'a, 'm> {
    state_dict: &'a StateDict,
    keys: BTreeMap<&'a str, &'a Tensor>,
    missing: Vec<String>,
    unexpected: Vec<String>,
    errors: Vec<String>,
    to_load: Vec<(&'m Variable, &'a Tensor)>,
}

impl<'a, 'm> Check<'a, 'm> {
    fn module(&mut self, own: &Own<'m>, prefix: &str) {
        let local = own.params.iter().map(|(n, v)| (n, *v, false)).chain(
            own.buffers
                .iter()
                .map(|(n, v, optional)| (n, *v, *optional)),
        );
        let mut local_names = BTreeSet::new();
        for (name, var, optional) in local {
            local_names.insert(name.as_str());
            let key = format!("{prefix}{name}");
            let Some(&input) = self.keys.get(key.as_str()) else {
                if !optional {
                    self.missing.push(key);
                }
                continue;
            };
            if input.shape() != &*var.shape() {
                self.errors.push(format!(
                    "size mismatch for {key}: copying a param with shape {} from checkpoint, \
                     the shape in current model is {}.",
                    size(input.shape()),
                    size(&var.shape())
                ));
                continue;
            }
            self.to_load.push((var, input));
        }
        let children: BTreeSet<&str> = own.children.iter().map(|(n, _)| n.as_str()).collect();
        for key in self.state_dict.keys() {
            let Some(rest) = key.strip_prefix(prefix) else {
                continue;
            };
            let unexpected = match rest.split_once('.') {
                Some((first, _)) => !children.contains(first),
                None => !local_names.contains(rest),
            };
            if unexpected {
                self.unexpected.push(key.to_string());
            }
        }
    }

    fn tree(&mut self, module: &'m dyn Module, prefix: &str) {
        let own = own(module);
        self.module(&own, prefix);
        for (name, child) in &own.children {
            self.tree(*child, &format!("{prefix}{name}."));
        }
    }
}

/// `module.load_state_dict(state_dict, strict)`: every check first, one error for all
/// problems, then the copies (nothing is written when there is an error).
pub(super) fn load_state_dict<M: Module + ?Sized>(
    module: &M,
    type_name: &str,
    state_dict: &StateDict,
    strict: bool,
) -> Result<IncompatibleKeys> {
    let mut check = Check {
        state_dict,
        keys: state_dict.iter().collect(),
        missing: Vec::new(),
        unexpected: Vec::new(),
        errors: Vec::new(),
        to_load: Vec::new(),
    };
    let root = own(module);
    check.module(&root, "");
    for (name, child) in &root.children {
        check.tree(*child, &format!("{name}."));
    }
    let quoted = |keys: &[String]| {
        keys.iter()
            .map(|k| format!("\"{k}\""))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut errors = Vec::new();
    if strict && !check.missing.is_empty() {
        errors.push(format!(
            "Missing key(s) in state_dict: {}. ",
            quoted(&check.missing)
        ));
    }
    if strict && !check.unexpected.is_empty() {
        errors.push(format!(
            "Unexpected key(s) in state_dict: {}. ",
            quoted(&check.unexpected)
        ));
    }
    errors.append(&mut check.errors);
    if !errors.is_empty() {
        return Err(Error::InvalidArgument(format!(
            "Error(s) in loading state_dict for {type_name}:\n\t{}",
            errors.join("\n\t")
        )));
    }
    let _guard = crate::autograd::no_grad();
    for (var, tensor) in &check.to_load {
        var.copy_(&Variable::from_tensor((*tensor).clone()))?;
    }
    Ok(IncompatibleKeys {
        missing_keys: check.missing,
        unexpected_keys: check.unexpected,
    })
}
