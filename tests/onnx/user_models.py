"""Models written the way users write them (not from torchvision), for the import checks of
tests/onnx/torchvision.sh (docs/model-import.md, "Models users write"). Each takes images
[3, S, S] and gives class logits, so the same synthetic data and parity check serve them.
export_torchvision.py builds them by the name "user:NAME".

A model that takes other inputs than images says so with INPUT: ("tokens", [T], vocab) for
token ids (its logits are then [T, vocab], one next-token prediction a position), or
("float", shape) for another per-sample shape (a volume [C, D, H, W]).
"""
import math

import torch
from torch import nn
from torch.nn import functional as F


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


class ResidualBlock(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x):
        return nn.functional.silu(x + self.bn2(self.conv2(nn.functional.silu(self.bn1(self.conv1(x))))))


class HandResNet(nn.Module):
    """A ResNet written by hand with functional SiLU and residual adds."""

    def __init__(self, classes=10, width=16):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(width), nn.SiLU())
        self.blocks = nn.Sequential(ResidualBlock(width), nn.MaxPool2d(2), ResidualBlock(width))
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        return self.head(self.blocks(self.stem(x)).mean((2, 3)))


class SqueezeExcite(nn.Module):
    def __init__(self, channels, squeezed):
        super().__init__()
        self.reduce, self.expand = nn.Conv2d(channels, squeezed, 1), nn.Conv2d(squeezed, channels, 1)

    def forward(self, x):
        gate = torch.sigmoid(self.expand(torch.relu(self.reduce(nn.functional.adaptive_avg_pool2d(x, 1)))))
        return x * gate


class SeparableNet(nn.Module):
    """Depthwise-separable convolutions with squeeze-excitation and Hardswish (MobileNet
    style, written from scratch)."""

    def __init__(self, classes=10):
        super().__init__()
        layers, channels = [nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.Hardswish()], 16
        for out in (24, 32):
            layers += [nn.Conv2d(channels, channels, 3, stride=2, padding=1, groups=channels), nn.BatchNorm2d(channels),
                       nn.Hardswish(), SqueezeExcite(channels, 8), nn.Conv2d(channels, out, 1), nn.BatchNorm2d(out)]
            channels = out
        self.features = nn.Sequential(*layers)
        self.head = nn.Linear(channels, classes)

    def forward(self, x):
        return self.head(torch.flatten(nn.functional.adaptive_avg_pool2d(self.features(x), 1), 1))


class TinyViT(nn.Module):
    """A ViT from torch.nn parts: conv patches, a learned class token joined by torch.cat,
    learned positions, pre-norm blocks with nn.MultiheadAttention(batch_first=True) and a
    GELU MLP, the class token's output to the head."""

    def __init__(self, image_size=64, patch=16, width=32, heads=4, blocks=2, classes=10):
        super().__init__()
        tokens = (image_size // patch) ** 2 + 1
        self.patches = nn.Conv2d(3, width, patch, stride=patch)
        self.cls = nn.Parameter(torch.randn(1, 1, width) * 0.02)
        self.positions = nn.Parameter(torch.randn(1, tokens, width) * 0.02)
        self.norms1 = nn.ModuleList(nn.LayerNorm(width) for _ in range(blocks))
        self.attentions = nn.ModuleList(nn.MultiheadAttention(width, heads, batch_first=True) for _ in range(blocks))
        self.norms2 = nn.ModuleList(nn.LayerNorm(width) for _ in range(blocks))
        self.mlps = nn.ModuleList(nn.Sequential(nn.Linear(width, 2 * width), nn.GELU(), nn.Linear(2 * width, width))
                                  for _ in range(blocks))
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        x = self.patches(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], 1) + self.positions
        for norm1, attention, norm2, mlp in zip(self.norms1, self.attentions, self.norms2, self.mlps):
            y = norm1(x)
            x = x + attention(y, y, y, need_weights=False)[0]
            x = x + mlp(norm2(x))
        return self.head(self.norm(x)[:, 0])


class CausalSelfAttention(nn.Module):
    """Attention as single-file GPTs write it: a packed projection split in three, heads by
    view and transpose, q @ k^T scaled, masked_fill of a tril buffer, softmax, @ v."""

    def __init__(self, width, heads, seq):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.register_buffer("mask", torch.tril(torch.ones(seq, seq)).view(1, 1, seq, seq))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.qkv(x).split(C, dim=2)
        q = q.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        k = k.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        v = v.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.proj(y)


class GptBlock(nn.Module):
    def __init__(self, width, heads, seq):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.attn = CausalSelfAttention(width, heads, seq)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class Gpt(nn.Module):
    """A decoder-only GPT in the common single-file style: token and position embeddings
    (positions from torch.arange), pre-norm blocks, the LM head tied to the token table."""

    INPUT = ("tokens", [16], 64)

    def __init__(self, vocab=64, seq=16, width=32, heads=2, blocks=2):
        super().__init__()
        self.tok = nn.Embedding(vocab, width)
        self.pos = nn.Embedding(seq, width)
        self.blocks = nn.ModuleList(GptBlock(width, heads, seq) for _ in range(blocks))
        self.ln_f = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab, bias=False)
        self.head.weight = self.tok.weight  # weight tying
        for module in self.modules():  # GPT-2's initialisation, as nanoGPT writes it
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, 0.0, 0.02)
            if isinstance(module, nn.Linear) and module.bias is not None:
                nn.init.zeros_(module.bias)

    def forward(self, idx):
        _, T = idx.size()
        pos = torch.arange(0, T, dtype=torch.long, device=idx.device)
        x = self.tok(idx) + self.pos(pos)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


class VolumeCnn(nn.Module):
    """A 3-D CNN for volumes (the scientific and medical case: CT or MRI crops, simulation
    cubes): Conv3d, BatchNorm3d, LeakyReLU, MaxPool3d, AvgPool3d, an anisotropic strided
    convolution, global average pooling to the head."""

    INPUT = ("float", [1, 16, 16, 16])

    def __init__(self, classes=10, width=8):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv3d(1, width, 3, padding=1, bias=False), nn.BatchNorm3d(width), nn.LeakyReLU(0.1), nn.MaxPool3d(2),
            nn.Conv3d(width, 2 * width, 3, padding=1), nn.BatchNorm3d(2 * width), nn.LeakyReLU(0.1), nn.AvgPool3d(2),
            nn.Conv3d(2 * width, 2 * width, (1, 3, 3), stride=(1, 2, 2), padding=(0, 1, 1)), nn.ReLU(),
            nn.AdaptiveAvgPool3d(1))
        self.head = nn.Linear(2 * width, classes)

    def forward(self, x):
        return self.head(torch.flatten(self.features(x), 1))


class RmsNorm(nn.Module):
    """RMSNorm as Llama-style code writes it by hand."""

    def __init__(self, width, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(width))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class SwiGluBlock(nn.Module):
    """A Llama-style block: RMSNorm, causal attention without biases, a SwiGLU MLP
    (w2(silu(w1 x) * w3 x))."""

    def __init__(self, width, heads, seq, hidden):
        super().__init__()
        self.heads = heads
        self.attn_norm, self.mlp_norm = RmsNorm(width), RmsNorm(width)
        self.wq, self.wk, self.wv, self.wo = (nn.Linear(width, width, bias=False) for _ in range(4))
        self.w1, self.w3 = nn.Linear(width, hidden, bias=False), nn.Linear(width, hidden, bias=False)
        self.w2 = nn.Linear(hidden, width, bias=False)
        self.register_buffer("mask", torch.full((seq, seq), float("-inf")).triu(1))

    def attention(self, x):
        B, T, C = x.shape
        q, k, v = (w(x).view(B, T, self.heads, C // self.heads).transpose(1, 2) for w in (self.wq, self.wk, self.wv))
        scores = q @ k.transpose(2, 3) / math.sqrt(C // self.heads) + self.mask[:T, :T]
        return self.wo((F.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(B, T, C))

    def forward(self, x):
        x = x + self.attention(self.attn_norm(x))
        h = self.mlp_norm(x)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


class LlamaStyle(nn.Module):
    """A small decoder in Llama's style (RMSNorm, SwiGLU, no biases, an additive -inf causal
    mask buffer), with learned positions instead of rotary ones and an untied head."""

    INPUT = ("tokens", [16], 64)

    def __init__(self, vocab=64, seq=16, width=32, heads=2, blocks=2, hidden=64):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.positions = nn.Embedding(seq, width)
        self.blocks = nn.ModuleList(SwiGluBlock(width, heads, seq, hidden) for _ in range(blocks))
        self.norm = RmsNorm(width)
        self.output = nn.Linear(width, vocab, bias=False)
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, 0.0, 0.02)

    def forward(self, idx):
        x = self.embed(idx) + self.positions(torch.arange(idx.shape[1], device=idx.device))
        for block in self.blocks:
            x = block(x)
        return self.output(self.norm(x))


class NormsNet(nn.Module):
    """A small segmentation-style encoder-decoder with the norms and up-sampling such models
    use: GroupNorm, InstanceNorm (affine), PReLU, reflection padding before an unpadded
    convolution, nearest and bilinear up-sampling, a learned per-channel bias added by hand,
    the map averaged to class logits."""

    def __init__(self, classes=10, width=8):
        super().__init__()
        self.stem = nn.Conv2d(3, width, 3, padding=1)
        self.gn = nn.GroupNorm(2, width)
        self.act = nn.PReLU(width)
        self.down = nn.Conv2d(width, 2 * width, 3, stride=2, padding=1)
        self.inorm = nn.InstanceNorm2d(2 * width, affine=True)
        self.refine = nn.Conv2d(2 * width, 2 * width, 3)  # after a reflection pad of 1
        self.up_nearest = nn.Upsample(scale_factor=2, mode="nearest")
        self.up_bilinear = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
        self.shift = nn.Parameter(torch.randn(2 * width, 1, 1) * 0.1)
        self.head = nn.Conv2d(2 * width, classes, 1)

    def forward(self, x):
        x = self.act(self.gn(self.stem(x)))
        x = F.relu(self.inorm(self.down(x)))
        x = self.refine(F.pad(x, (1, 1, 1, 1), mode="reflect"))
        x = self.up_bilinear(F.avg_pool2d(self.up_nearest(x), 2)) + self.shift
        return self.head(x).mean((2, 3))


MODELS = {
    "norms_net": NormsNet,
    "llama_style": LlamaStyle,
    "volume_cnn": VolumeCnn,
    "gpt": Gpt,
    "hand_resnet": HandResNet,
    "separable_net": SeparableNet,
    "tiny_vit": TinyViT,
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
