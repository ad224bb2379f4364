//! ResNet-18/34/50 with torchvision's module tree, names, initialisation and forward
//! (as the Python package's `rustgrad.models.resnet`).

use crate::error::Result;
use crate::nn::init::{kaiming_normal_, Fan, Gain};
use crate::nn::{
    Activation, AdaptiveAvgPool2d, BatchNorm2d, Conv2d, ConvOptions, Linear, MaxPool2d, Module,
    Sequential, Training,
};
use crate::variable::Variable;

/// A 3x3 convolution with padding 1 and no bias (`conv3x3`).
fn conv3x3(in_planes: usize, out_planes: usize, stride: usize) -> Result<Conv2d> {
    let options = ConvOptions::default().stride(stride).padding(1).bias(false);
    Conv2d::with(in_planes, out_planes, [3, 3], options)
}

/// A 1x1 convolution without bias (`conv1x1`).
fn conv1x1(in_planes: usize, out_planes: usize, stride: usize) -> Result<Conv2d> {
    let options = ConvOptions::default().stride(stride).bias(false);
    Conv2d::with(in_planes, out_planes, [1, 1], options)
}

/// ResNet-18/34's residual block: two 3x3 conv + batch norm, plus the (optionally
/// downsampled) input, then ReLU.
#[derive(crate::nn::Module)]
pub struct BasicBlock {
    /// 3x3, carries the stride.
    pub conv1: Conv2d,
    /// After `conv1`.
    pub bn1: BatchNorm2d,
    /// ReLU (no parameters).
    pub relu: Activation,
    /// 3x3.
    pub conv2: Conv2d,
    /// After `conv2`.
    pub bn2: BatchNorm2d,
    /// 1x1 conv + batch norm on the input when the shape changes.
    pub downsample: Option<Sequential>,
    /// The train/eval flag.
    pub training: Training,
}

/// ResNet-50's residual block: 1x1 reduce, 3x3 (carrying the stride), 1x1 expand by 4,
/// each with a batch norm.
#[derive(crate::nn::Module)]
pub struct Bottleneck {
    /// 1x1 reduce.
    pub conv1: Conv2d,
    /// After `conv1`.
    pub bn1: BatchNorm2d,
    /// 3x3, carries the stride.
    pub conv2: Conv2d,
    /// After `conv2`.
    pub bn2: BatchNorm2d,
    /// 1x1 expand.
    pub conv3: Conv2d,
    /// After `conv3`.
    pub bn3: BatchNorm2d,
    /// ReLU (no parameters).
    pub relu: Activation,
    /// 1x1 conv + batch norm on the input when the shape changes.
    pub downsample: Option<Sequential>,
    /// The train/eval flag.
    pub training: Training,
}

fn residual(out: Variable, x: &Variable, downsample: &Option<Sequential>) -> Result<Variable> {
    let identity = match downsample {
        Some(d) => d.forward(x)?,
        None => x.clone(),
    };
    out.add(&identity)?.relu()
}

impl Module for BasicBlock {
    fn forward(&self, x: &Variable) -> Result<Variable> {
        let out = self
            .relu
            .forward(&self.bn1.forward(&self.conv1.forward(x)?)?)?;
        let out = self.bn2.forward(&self.conv2.forward(&out)?)?;
        residual(out, x, &self.downsample)
    }
}

impl Module for Bottleneck {
    fn forward(&self, x: &Variable) -> Result<Variable> {
        let out = self
            .relu
            .forward(&self.bn1.forward(&self.conv1.forward(x)?)?)?;
        let out = self
            .relu
            .forward(&self.bn2.forward(&self.conv2.forward(&out)?)?)?;
        let out = self.bn3.forward(&self.conv3.forward(&out)?)?;
        residual(out, x, &self.downsample)
    }
}

/// Which residual block a ResNet stacks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Block {
    /// [`BasicBlock`] (expansion 1): ResNet-18 and -34.
    Basic,
    /// [`Bottleneck`] (expansion 4): ResNet-50.
    Bottleneck,
}

impl Block {
    /// Output channels per planes.
    pub fn expansion(self) -> usize {
        match self {
            Block::Basic => 1,
            Block::Bottleneck => 4,
        }
    }
}

/// torchvision's ResNet: stem (7x7 stride-2 conv, batch norm, ReLU, 3x3 stride-2 max
/// pool), four stages of residual blocks, global average pool, linear classifier.
#[derive(crate::nn::Module)]
pub struct ResNet {
    /// 7x7 stride-2 stem convolution.
    pub conv1: Conv2d,
    /// After `conv1`.
    pub bn1: BatchNorm2d,
    /// ReLU (no parameters).
    pub relu: Activation,
    /// 3x3 stride-2 max pool.
    pub maxpool: MaxPool2d,
    /// Stage 1 (stride 1).
    pub layer1: Sequential,
    /// Stage 2 (stride 2).
    pub layer2: Sequential,
    /// Stage 3 (stride 2).
    pub layer3: Sequential,
    /// Stage 4 (stride 2).
    pub layer4: Sequential,
    /// Global average pool to 1x1.
    pub avgpool: AdaptiveAvgPool2d,
    /// The classifier; replace it to fine-tune on other classes.
    pub fc: Linear,
    /// The train/eval flag.
    pub training: Training,
}

impl ResNet {
    /// torchvision's `ResNet(block, layers, num_classes)`: stage widths 64, 128, 256,
    /// 512.
    pub fn new(block: Block, layers: [usize; 4], num_classes: usize) -> Result<ResNet> {
        ResNet::with_widths(block, layers, [64, 128, 256, 512], num_classes)
    }

    /// A ResNet whose four stages have `widths` planes (the stem has `widths[0]`
    /// channels): torchvision's tree and names at a reduced width, for tests and small
    /// data. Weights are initialised as torchvision's: each layer's default draws in
    /// construction order, then every convolution weight re-drawn from
    /// `kaiming_normal_(mode="fan_out", nonlinearity="relu")` in module order, batch
    /// norms at weight 1 and bias 0.
    pub fn with_widths(
        block: Block,
        layers: [usize; 4],
        widths: [usize; 4],
        num_classes: usize,
    ) -> Result<ResNet> {
        let stem = ConvOptions::default().stride(2).padding(3).bias(false);
        let mut inplanes = widths[0];
        let conv1 = Conv2d::with(3, inplanes, [7, 7], stem)?;
        let bn1 = BatchNorm2d::new(inplanes)?;
        let mut stages = Vec::with_capacity(4);
        for (i, (&planes, &blocks)) in widths.iter().zip(&layers).enumerate() {
            let stride = if i == 0 { 1 } else { 2 };
            stages.push(make_layer(block, &mut inplanes, planes, blocks, stride)?);
        }
        let fc = Linear::new(widths[3] * block.expansion(), num_classes)?;
        let [layer1, layer2, layer3, layer4]: [Sequential; 4] = stages
            .try_into()
            .unwrap_or_else(|_| unreachable!("four stages"));
        let model = ResNet {
            conv1,
            bn1,
            relu: Activation::ReLU,
            maxpool: MaxPool2d::new(3, 2, 1),
            layer1,
            layer2,
            layer3,
            layer4,
            avgpool: AdaptiveAvgPool2d::new([1, 1]),
            fc,
            training: Training::default(),
        };
        // Every 4-D parameter of a ResNet is a convolution weight, and
        // named_parameters lists them in module order (`self.modules()`).
        for (_, p) in model.named_parameters() {
            if p.dim() == 4 {
                kaiming_normal_(&p, Fan::Out, Gain::Relu)?;
            }
        }
        Ok(model)
    }
}

/// One stage (`_make_layer`): a first block that may change stride and width (with a
/// 1x1 conv + batch norm `downsample`, built before the block as torchvision does),
/// then `blocks - 1` blocks at the new width.
fn make_layer(
    block: Block,
    inplanes: &mut usize,
    planes: usize,
    blocks: usize,
    stride: usize,
) -> Result<Sequential> {
    let out = planes * block.expansion();
    let downsample = if stride != 1 || *inplanes != out {
        Some(
            Sequential::new()
                .add(conv1x1(*inplanes, out, stride)?)
                .add(BatchNorm2d::new(out)?),
        )
    } else {
        None
    };
    let mut layer = Sequential::new();
    push_block(&mut layer, block, *inplanes, planes, stride, downsample)?;
    *inplanes = out;
    for _ in 1..blocks {
        push_block(&mut layer, block, out, planes, 1, None)?;
    }
    Ok(layer)
}

fn push_block(
    layer: &mut Sequential,
    block: Block,
    inplanes: usize,
    planes: usize,
    stride: usize,
    downsample: Option<Sequential>,
) -> Result<()> {
    match block {
        Block::Basic => layer.push(BasicBlock {
            conv1: conv3x3(inplanes, planes, stride)?,
            bn1: BatchNorm2d::new(planes)?,
            relu: Activation::ReLU,
            conv2: conv3x3(planes, planes, 1)?,
            bn2: BatchNorm2d::new(planes)?,
            downsample,
            training: Training::default(),
        }),
        Block::Bottleneck => {
            let out = planes * 4;
            layer.push(Bottleneck {
                conv1: conv1x1(inplanes, planes, 1)?,
                bn1: BatchNorm2d::new(planes)?,
                conv2: conv3x3(planes, planes, stride)?,
                bn2: BatchNorm2d::new(planes)?,
                conv3: conv1x1(planes, out, 1)?,
                bn3: BatchNorm2d::new(out)?,
                relu: Activation::ReLU,
                downsample,
                training: Training::default(),
            })
        }
    }
    Ok(())
}

impl Module for ResNet {
    fn forward(&self, x: &Variable) -> Result<Variable> {
        let x = self.conv1.forward(x)?;
        let x = self.relu.forward(&self.bn1.forward(&x)?)?;
        let mut x = self.maxpool.forward(&x)?;
        for layer in [&self.layer1, &self.layer2, &self.layer3, &self.layer4] {
            x = layer.forward(&x)?;
        }
        let x = self.avgpool.forward(&x)?;
        let n = x.shape()[0] as i64;
        self.fc.forward(&x.reshape(&[n, -1])?)
    }
}

/// ResNet-18 (`BasicBlock`, stages [2, 2, 2, 2]), as `torchvision.models.resnet18`.
pub fn resnet18(num_classes: usize) -> Result<ResNet> {
    ResNet::new(Block::Basic, [2, 2, 2, 2], num_classes)
}

/// ResNet-34 (`BasicBlock`, stages [3, 4, 6, 3]).
pub fn resnet34(num_classes: usize) -> Result<ResNet> {
    ResNet::new(Block::Basic, [3, 4, 6, 3], num_classes)
}

/// ResNet-50 (`Bottleneck`, stages [3, 4, 6, 3]).
pub fn resnet50(num_classes: usize) -> Result<ResNet> {
    ResNet::new(Block::Bottleneck, [3, 4, 6, 3], num_classes)
}
