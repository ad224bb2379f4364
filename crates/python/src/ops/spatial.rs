//! `Tensor` methods behind `rustgrad.nn.functional.pad`, `interpolate`, `grid_sample`
//! and `affine_grid`: the binding of `rustgrad::ops::spatial`. The Python functions
//! parse PyTorch's arguments (modes, sizes, scale factors, warnings) and call these
//! private methods with plain values.

use crate::errors::IntoPyResult;
use crate::tensor::{maybe_detach, new_tensor};
use crate::PyTensor;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use rustgrad::{GridPaddingMode, GridSampleMode, PadMode, UpsampleMode, Variable};

#[pymethods]
impl PyTensor {
    /// `F.pad(self, pad, mode, value)`; `mode` is one of PyTorch's four names.
    #[pyo3(signature = (pad, mode, value = None))]
    fn _pad(
        &self,
        py: Python<'_>,
        pad: Vec<i64>,
        mode: &str,
        value: Option<f64>,
    ) -> PyResult<Py<PyTensor>> {
        let mode = match mode {
            "constant" => PadMode::Constant,
            "reflect" => PadMode::Reflect,
            "replicate" => PadMode::Replicate,
            "circular" => PadMode::Circular,
            other => {
                return Err(pyo3::exceptions::PyNotImplementedError::new_err(format!(
                    "Unrecognised padding mode {other}"
                )))
            }
        };
        let var = &self.var;
        let out = maybe_detach(py, var.numel(), || var.pad(&pad, mode, value));
        new_tensor(py, out.py()?)
    }

    /// `_upsample_bilinear2d_aa` / `_upsample_bicubic2d_aa` (`cubic`) with the output
    /// size computed by the caller and the user's scale factors.
    fn _upsample_antialias(
        &self,
        py: Python<'_>,
        cubic: bool,
        output_size: Vec<usize>,
        scales: Vec<Option<f64>>,
        align_corners: bool,
    ) -> PyResult<Py<PyTensor>> {
        let var = &self.var;
        let work = var.numel().max(output_size.iter().product());
        let out = maybe_detach(py, work, || {
            var.upsample_antialias(cubic, &output_size, &scales, align_corners)
        });
        new_tensor(py, out.py()?)
    }

    /// `upsample_*` with the output size computed by the caller and the user's scale
    /// factors (`None` where not given or recomputed).
    fn _upsample(
        &self,
        py: Python<'_>,
        mode: &str,
        output_size: Vec<usize>,
        scales: Vec<Option<f64>>,
        align_corners: bool,
    ) -> PyResult<Py<PyTensor>> {
        let mode = match mode {
            "nearest" => UpsampleMode::Nearest,
            "nearest-exact" => UpsampleMode::NearestExact,
            "linear" | "bilinear" | "trilinear" => UpsampleMode::Linear,
            "bicubic" => UpsampleMode::Cubic,
            other => {
                return Err(PyValueError::new_err(format!(
                    "rustgrad: unknown upsampling mode {other}"
                )))
            }
        };
        let var = &self.var;
        let work = var.numel().max(output_size.iter().product());
        let out = maybe_detach(py, work, || {
            var.upsample(mode, &output_size, &scales, align_corners)
        });
        new_tensor(py, out.py()?)
    }

    /// `torch.grid_sampler(self, grid, mode, padding_mode, align_corners)` with the
    /// modes by name.
    fn _grid_sample(
        &self,
        py: Python<'_>,
        grid: &Bound<'_, PyTensor>,
        mode: &str,
        padding_mode: &str,
        align_corners: bool,
    ) -> PyResult<Py<PyTensor>> {
        let mode = match mode {
            "bilinear" => GridSampleMode::Bilinear,
            "nearest" => GridSampleMode::Nearest,
            "bicubic" => GridSampleMode::Bicubic,
            other => {
                return Err(pyo3::exceptions::PyNotImplementedError::new_err(format!(
                    "rustgrad: grid_sample mode '{other}' is not implemented"
                )))
            }
        };
        let padding = match padding_mode {
            "zeros" => GridPaddingMode::Zeros,
            "border" => GridPaddingMode::Border,
            "reflection" => GridPaddingMode::Reflection,
            other => {
                return Err(PyValueError::new_err(format!(
                    "nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or 'reflection', but got: '{other}'"
                )))
            }
        };
        let (var, grid): (&Variable, Variable) = (&self.var, grid.get().var.clone());
        let work = var.numel().max(grid.numel());
        let out = maybe_detach(py, work, || {
            var.grid_sample(&grid, mode, padding, align_corners)
        });
        new_tensor(py, out.py()?)
    }

    /// `torch.affine_grid_generator(self, size, align_corners)`.
    fn _affine_grid(
        &self,
        py: Python<'_>,
        size: Vec<usize>,
        align_corners: bool,
    ) -> PyResult<Py<PyTensor>> {
        let var = &self.var;
        let work: usize = size.iter().product();
        let out = maybe_detach(py, work, || var.affine_grid(&size, align_corners));
        new_tensor(py, out.py()?)
    }
}
