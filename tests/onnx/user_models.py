"""Models written the way users write them (not from torchvision), for the import checks of
tests/onnx/torchvision.sh (docs/model-import.md, "Models users write"). Each takes images
[3, S, S] and gives class logits, so the same synthetic data and parity check serve them.
export_torchvision.py builds them by the name "user:NAME".
"""
import torch
from torch import nn


class LeakyCnn(nn.Module):
    """A DCGAN-discriminator-style classifier: strided convolutions with LeakyReLU(0.2)."""

    def __init__(self, classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 4, stride=2, padding=1), nn.LeakyReLU(0.2),
            nn.Conv2d(16, 32, 4, stride=2, padding=1, bias=False), nn.BatchNorm2d(32), nn.LeakyReLU(0.2),
            nn.AdaptiveAvgPool2d(1))
        self.head = nn.Linear(32, classes)

    def forward(self, x):
        return self.head(torch.flatten(self.features(x), 1))


class ActivationsMlp(nn.Module):
    """An MLP on flattened pixels through ELU, Tanh and Softplus (a tabular-style network)."""

    def __init__(self, features=3 * 16 * 16, classes=10):
        super().__init__()
        self.pool = nn.AdaptiveAvgPool2d(16)
        self.net = nn.Sequential(nn.Linear(features, 64), nn.ELU(), nn.Linear(64, 64), nn.Tanh(),
                                 nn.Linear(64, 32), nn.Softplus(), nn.Linear(32, classes))

    def forward(self, x):
        return self.net(self.pool(x).flatten(1))


class MixerBlock(nn.Module):
    def __init__(self, tokens, width):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.token_mlp = nn.Sequential(nn.Linear(tokens, 2 * tokens), nn.GELU(), nn.Linear(2 * tokens, tokens))
        self.channel_mlp = nn.Sequential(nn.Linear(width, 2 * width), nn.GELU(), nn.Linear(2 * width, width))

    def forward(self, x):  # [B, T, D]
        x = x + self.token_mlp(self.norm1(x).transpose(1, 2)).transpose(1, 2)
        return x + self.channel_mlp(self.norm2(x))


class Mixer(nn.Module):
    """An MLP-Mixer: patches by a strided convolution, flatten(2).transpose(1, 2) to tokens."""

    def __init__(self, image_size=64, patch=16, width=32, blocks=2, classes=10):
        super().__init__()
        tokens = (image_size // patch) ** 2
        self.stem = nn.Conv2d(3, width, patch, stride=patch)
        self.blocks = nn.Sequential(*[MixerBlock(tokens, width) for _ in range(blocks)])
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        x = self.stem(x).flatten(2).transpose(1, 2)
        return self.head(self.norm(self.blocks(x)).mean(1))


class EncoderClassifier(nn.Module):
    """nn.TransformerEncoder(batch_first=True) on conv patches, a learned position table and
    mean pooling: how a user writes a small vision transformer from torch.nn parts."""

    def __init__(self, image_size=64, patch=16, width=32, heads=4, layers=2, classes=10):
        super().__init__()
        tokens = (image_size // patch) ** 2
        self.stem = nn.Conv2d(3, width, patch, stride=patch)
        self.positions = nn.Parameter(torch.randn(1, tokens, width) * 0.02)
        layer = nn.TransformerEncoderLayer(width, heads, dim_feedforward=2 * width, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        x = self.stem(x).flatten(2).transpose(1, 2) + self.positions
        return self.head(self.encoder(x).mean(1))


def double_conv(inputs, outputs):
    return nn.Sequential(nn.Conv2d(inputs, outputs, 3, padding=1, bias=False), nn.BatchNorm2d(outputs), nn.ReLU(inplace=True),
                         nn.Conv2d(outputs, outputs, 3, padding=1, bias=False), nn.BatchNorm2d(outputs), nn.ReLU(inplace=True))


class UNetClassifier(nn.Module):
    """A small U-Net: two levels down by max pooling, up by ConvTranspose2d(2, stride 2),
    skip connections joined by channel concatenation. burst's losses are over class logits,
    so its per-pixel map is averaged to them (the layers are a segmentation network's)."""

    def __init__(self, classes=10, width=8):
        super().__init__()
        self.down1, self.down2 = double_conv(3, width), double_conv(width, 2 * width)
        self.bottom = double_conv(2 * width, 4 * width)
        self.pool = nn.MaxPool2d(2)
        self.up2, self.dec2 = nn.ConvTranspose2d(4 * width, 2 * width, 2, stride=2), double_conv(4 * width, 2 * width)
        self.up1, self.dec1 = nn.ConvTranspose2d(2 * width, width, 2, stride=2), double_conv(2 * width, width)
        self.out = nn.Conv2d(width, classes, 1)

    def forward(self, x):
        d1 = self.down1(x)
        d2 = self.down2(self.pool(d1))
        bottom = self.bottom(self.pool(d2))
        u2 = self.dec2(torch.cat([self.up2(bottom), d2], 1))
        u1 = self.dec1(torch.cat([self.up1(u2), d1], 1))
        return self.out(u1).mean((2, 3))


MODELS = {
    "unet_classifier": UNetClassifier,
    "encoder_classifier": EncoderClassifier,
    "mixer": Mixer,
    "leaky_cnn": LeakyCnn,
    "activations_mlp": ActivationsMlp,
}


def build(name):
    """User model NAME (after torch.manual_seed by the caller), in training mode."""
    if name not in MODELS:
        raise SystemExit(f"no user model '{name}'; there are {', '.join(sorted(MODELS))}")
    return MODELS[name]().train()
