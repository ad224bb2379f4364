//! Anomaly detection in the engine (Note [Anomaly detection]): traces captured only
//! while the mode is on (and not for AccumulateGrad), the NaN check, and the report of
//! a failing node before its error propagates unchanged. The mode and the callbacks are
//! process-wide, so the scenarios run in one test, in order.

use rustgrad::autograd::{anomaly, no_grad};
use rustgrad::{
    intern_name, CustomBackward, CustomOptions, Error, Result, SavedValues, Tensor, Variable,
};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

fn leaf(data: &[f64], requires_grad: bool) -> Variable {
    Variable::new(
        Tensor::from_vec(data.to_vec(), &[data.len()]).unwrap(),
        requires_grad,
    )
    .unwrap()
}

/// A custom op whose backward fails.
struct Failing;

impl CustomBackward for Failing {
    fn name(&self) -> &'static str {
        intern_name("FailingBackward")
    }

    fn backward(
        &self,
        _grads: &[Option<Variable>],
        _saved: &SavedValues,
        _needs: &[bool],
    ) -> Result<Vec<Option<Variable>>> {
        Err(Error::InvalidArgument("failing backward".into()))
    }
}

#[test]
fn anomaly_mode_captures_checks_and_reports() {
    let captured = Arc::new(AtomicUsize::new(0));
    let reports: Arc<Mutex<Vec<String>>> = Arc::default();
    {
        let captured = captured.clone();
        anomaly::set_trace_capture(Some(Arc::new(move || {
            let n = captured.fetch_add(1, Ordering::SeqCst);
            Some(format!("trace #{n}\n"))
        })));
        let reports = reports.clone();
        anomaly::set_error_reporter(Some(Arc::new(move |message: &str| {
            reports.lock().unwrap().push(message.to_string());
        })));
    }
    assert!(!anomaly::is_enabled());
    assert!(anomaly::is_check_nan_enabled());

    // Off: nothing is captured and NaN gradients flow.
    let x = leaf(&[0.0, 1.0], true);
    let w = leaf(&[f64::NAN, 2.0], false);
    x.mul(&w).unwrap().sum().unwrap().backward().unwrap();
    assert_eq!(captured.load(Ordering::SeqCst), 0);
    let g = x.grad().unwrap().to_vec::<f64>();
    assert!(g[0].is_nan() && g[1] == 2.0);

    // On: one trace per op node (mul, sum), none for the leaf's AccumulateGrad.
    anomaly::set_enabled(true, true);
    let x = leaf(&[0.0, 1.0], true);
    let y = x.mul(&w).unwrap();
    let loss = y.sum().unwrap();
    assert_eq!(captured.load(Ordering::SeqCst), 2);
    let err = loss.backward().unwrap_err();
    assert_eq!(
        err.to_string(),
        "Function 'MulBackward0' returned nan values in its 0th output."
    );
    assert!(matches!(
        err,
        Error::AnomalyNan {
            name: "MulBackward0",
            index: 0
        }
    ));
    assert_eq!(
        reports.lock().unwrap().as_slice(),
        ["Error detected in MulBackward0. Traceback of forward call that caused the error:\ntrace #0\n"]
    );
    assert!(x.grad().is_none());

    // check_nan off: the same graph shape runs through.
    anomaly::set_enabled(true, false);
    let x = leaf(&[0.0, 1.0], true);
    x.mul(&w).unwrap().sum().unwrap().backward().unwrap();
    assert!(x.grad().unwrap().to_vec::<f64>()[0].is_nan());

    // A failing custom backward: reported, then its own error comes back unchanged.
    reports.lock().unwrap().clear();
    anomaly::set_enabled(true, true);
    let x = leaf(&[1.0, 2.0], true);
    let out = {
        let _guard = no_grad();
        x.mul(&leaf(&[3.0, 3.0], false)).unwrap()
    };
    let before = captured.load(Ordering::SeqCst);
    let z = Variable::record_custom(Arc::new(Failing), &[&x], &[out], CustomOptions::default())
        .unwrap()
        .remove(0);
    assert_eq!(captured.load(Ordering::SeqCst), before + 1);
    let err = z.backward_with(Some(&leaf(&[1.0, 1.0], false)), false, false);
    assert!(matches!(err, Err(Error::InvalidArgument(ref m)) if m == "failing backward"));
    let reports_now = reports.lock().unwrap().clone();
    assert_eq!(reports_now.len(), 1);
    assert!(reports_now[0].starts_with(
        "Error detected in FailingBackward. Traceback of forward call that caused the error:\ntrace #"
    ));

    // A node recorded while the mode was off has no trace.
    anomaly::set_enabled(false, true);
    let x = leaf(&[0.0, 1.0], true);
    let loss = x.mul(&w).unwrap().sum().unwrap();
    anomaly::set_enabled(true, true);
    reports.lock().unwrap().clear();
    assert!(loss.backward().is_err());
    assert_eq!(
        reports.lock().unwrap().as_slice(),
        ["Error detected in MulBackward0. No forward pass information available. Enable detect anomaly during forward pass for more information."]
    );

    anomaly::set_enabled(false, true);
    anomaly::set_error_reporter(None);
    anomaly::set_trace_capture(None);
}
