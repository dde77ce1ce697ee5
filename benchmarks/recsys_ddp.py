"""A DDP training script that is not a zensim workload (it imports nothing of zensim): a small
recommender, bags of 20 item ids (EmbeddingBag 200,000 x 64, sum) and a user id (Embedding 20,000 x
64) into an MLP, on synthetic clicks with skewed ids, read through a DataLoader over a
DistributedSampler, trained with Adagrad. docs/capture.md measures `zensim capture --script
--virtual-ranks N` on it:

    zensim capture --script benchmarks/recsys_ddp.py --virtual-ranks 64 --warmup 2 --iterations 5 \\
        --params 'items.*,users.*' -o recsys-64.zt -- --samples 14336

or run it as any DDP script: `torchrun --nproc-per-node 4 benchmarks/recsys_ddp.py`. `--items`, `--users`,
`--dim` size the model (the defaults above); `benchmarks/ddp_script_vs_iteration.py` trains a small one
(32,768 x 16 and 4,096 x 16) on the emulated cluster.
"""
import argparse
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

p = argparse.ArgumentParser()
p.add_argument("--epochs", type=int, default=1)
p.add_argument("--samples", type=int, default=20000)
p.add_argument("--batch", type=int, default=32)
p.add_argument("--items", type=int, default=200_000, help="item vocabulary (EmbeddingBag rows)")
p.add_argument("--users", type=int, default=20_000, help="user vocabulary (Embedding rows)")
p.add_argument("--dim", type=int, default=64, help="embedding width")
args = p.parse_args()


class Recommender(torch.nn.Module):
    """Item bag and user embeddings, concatenated, into a 2-layer MLP giving a click logit."""

    def __init__(self, items, users, dim):
        super().__init__()
        self.items = torch.nn.EmbeddingBag(items, dim, mode="sum")
        self.users = torch.nn.Embedding(users, dim)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(2 * dim, 128), torch.nn.ReLU(), torch.nn.Linear(128, 1))

    def forward(self, items, user):
        """The click logit of each sample."""
        return self.mlp(torch.cat([self.items(items), self.users(user)], 1)).squeeze(1)


dist.init_process_group("gloo")
torch.manual_seed(0)
g = torch.Generator().manual_seed(1)
items = (torch.rand(args.samples, 20, generator=g) ** 4 * args.items).long()   # skewed popularity
users = (torch.rand(args.samples, generator=g) ** 2 * args.users).long()
clicks = torch.rand(args.samples, generator=g).round()
data = TensorDataset(items, users, clicks)
sampler = DistributedSampler(data, shuffle=True, seed=0)
loader = DataLoader(data, batch_size=args.batch, sampler=sampler)
model = DistributedDataParallel(Recommender(args.items, args.users, args.dim))
opt = torch.optim.Adagrad(model.parameters(), lr=0.05)
for epoch in range(args.epochs):
    sampler.set_epoch(epoch)
    for x, u, y in loader:
        opt.zero_grad()
        torch.nn.functional.binary_cross_entropy_with_logits(model(x, u), y).backward()
        opt.step()
dist.destroy_process_group()
