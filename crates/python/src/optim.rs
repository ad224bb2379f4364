//! `rustgrad.optim`'s native step: one call per param group, without the GIL. See Note
//! [Optimizer steps].

use crate::errors::IntoPyResult;
use crate::tensor::{mark_python_site, new_tensor, python_site, PyTensor};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use rustgrad::optim::{
    step_group_at, AdadeltaOptions, AdagradOptions, AdamOptions, AdamaxOptions, NAdamOptions,
    Options, ParamState, RAdamOptions, RmsPropOptions, SgdOptions,
};
use rustgrad::storage::WriteSite;
use rustgrad::{Tensor, Variable};
use std::panic::Location;

/// Reads the options of `kind` from a param group dict (its PyTorch keys).
fn options_from_group(kind: &str, group: &Bound<'_, PyDict>) -> PyResult<Options> {
    let f = |key: &str| -> PyResult<f64> {
        match group.get_item(key)? {
            Some(v) => v.extract(),
            None => Err(PyValueError::new_err(format!(
                "rustgrad: param group has no '{key}'"
            ))),
        }
    };
    let b = |key: &str| -> PyResult<bool> {
        match group.get_item(key)? {
            Some(v) => v.is_truthy(),
            None => Ok(false),
        }
    };
    let betas = || -> PyResult<(f64, f64)> {
        match group.get_item("betas")? {
            Some(v) => v.extract(),
            None => Err(PyValueError::new_err(
                "rustgrad: param group has no 'betas'",
            )),
        }
    };
    Ok(match kind {
        "SGD" => Options::Sgd(SgdOptions {
            lr: f("lr")?,
            momentum: f("momentum")?,
            dampening: f("dampening")?,
            weight_decay: f("weight_decay")?,
            nesterov: b("nesterov")?,
            maximize: b("maximize")?,
        }),
        "Adam" | "AdamW" => Options::Adam(AdamOptions {
            lr: f("lr")?,
            betas: betas()?,
            eps: f("eps")?,
            weight_decay: f("weight_decay")?,
            amsgrad: b("amsgrad")?,
            maximize: b("maximize")?,
            decoupled_weight_decay: kind == "AdamW" || b("decoupled_weight_decay")?,
        }),
        "Adamax" => Options::Adamax(AdamaxOptions {
            lr: f("lr")?,
            betas: betas()?,
            eps: f("eps")?,
            weight_decay: f("weight_decay")?,
            maximize: b("maximize")?,
        }),
        "NAdam" => Options::NAdam(NAdamOptions {
            lr: f("lr")?,
            betas: betas()?,
            eps: f("eps")?,
            weight_decay: f("weight_decay")?,
            momentum_decay: f("momentum_decay")?,
            decoupled_weight_decay: b("decoupled_weight_decay")?,
            maximize: b("maximize")?,
        }),
        "RAdam" => Options::RAdam(RAdamOptions {
            lr: f("lr")?,
            betas: betas()?,
            eps: f("eps")?,
            weight_decay: f("weight_decay")?,
            decoupled_weight_decay: b("decoupled_weight_decay")?,
            maximize: b("maximize")?,
        }),
        "RMSprop" => Options::RmsProp(RmsPropOptions {
            lr: f("lr")?,
            alpha: f("alpha")?,
            eps: f("eps")?,
            weight_decay: f("weight_decay")?,
            momentum: f("momentum")?,
            centered: b("centered")?,
            maximize: b("maximize")?,
        }),
        "Adagrad" => Options::Adagrad(AdagradOptions {
            lr: f("lr")?,
            lr_decay: f("lr_decay")?,
            weight_decay: f("weight_decay")?,
            initial_accumulator_value: f("initial_accumulator_value")?,
            eps: f("eps")?,
            maximize: b("maximize")?,
        }),
        "Adadelta" => Options::Adadelta(AdadeltaOptions {
            lr: f("lr")?,
            rho: f("rho")?,
            eps: f("eps")?,
            weight_decay: f("weight_decay")?,
            maximize: b("maximize")?,
        }),
        other => {
            return Err(PyValueError::new_err(format!(
                "rustgrad: no native optimizer named {other}"
            )))
        }
    })
}

fn state_tensor(state: &Bound<'_, PyDict>, key: &str) -> PyResult<Option<Tensor>> {
    match state.get_item(key)? {
        None => Ok(None),
        Some(v) if v.is_none() => Ok(None),
        Some(v) => {
            let t = v.cast::<PyTensor>()?;
            Ok(Some(t.get().var.tensor().clone()))
        }
    }
}

/// Stores `after` under `key` unless it is the tensor that was there (`before`).
fn store(
    py: Python<'_>,
    state: &Bound<'_, PyDict>,
    key: &str,
    before: &Option<Tensor>,
    after: &Option<Tensor>,
) -> PyResult<()> {
    let Some(after) = after else { return Ok(()) };
    if before.as_ref().is_some_and(|b| b.shares_storage(after)) {
        return Ok(());
    }
    state.set_item(key, new_tensor(py, Variable::from_tensor(after.clone()))?)
}

/// `rustgrad.optim`'s step of one param group: `kind` names the update rule (the
/// optimizer's class name), `group` is the param group dict (its options are read
/// now, so edits such as a scheduler's `lr` apply), `params` the group's parameters
/// that have a gradient and `states` their state dicts (PyTorch's keys), which gain the
/// entries the step creates. The update runs with the GIL released.
#[pyfunction]
pub fn _optim_step(
    py: Python<'_>,
    kind: &str,
    group: &Bound<'_, PyDict>,
    params: Vec<Bound<'_, PyTensor>>,
    states: Vec<Bound<'_, PyDict>>,
) -> PyResult<()> {
    let options = options_from_group(kind, group)?;
    let names = options.buffer_names();
    let variables: Vec<Variable> = params.iter().map(|p| p.get().var.clone()).collect();
    let before: Vec<ParamState> = states
        .iter()
        .map(|s| {
            Ok(ParamState {
                step: state_tensor(s, "step")?,
                mu_product: state_tensor(s, "mu_product")?,
                buffers: names
                    .iter()
                    .map(|n| state_tensor(s, n))
                    .collect::<PyResult<_>>()?,
            })
        })
        .collect::<PyResult<_>>()?;
    let mut after = before.clone();
    let site = python_site(py).unwrap_or(WriteSite::Rust(Location::caller()));
    py.detach(|| step_group_at(&options, &variables, &mut after, site))
        .py()?;
    for ((state, old), new) in states.iter().zip(&before).zip(&after) {
        store(py, state, "step", &old.step, &new.step)?;
        store(py, state, "mu_product", &old.mu_product, &new.mu_product)?;
        for ((name, o), n) in names.iter().zip(&old.buffers).zip(&new.buffers) {
            store(py, state, name, o, n)?;
        }
    }
    for v in &variables {
        mark_python_site(py, v);
    }
    Ok(())
}
