"""Fashion-MNIST MLP with DistributedDataParallel, as a dlsweep trial (see README.md here).
Runs alone (1 process), under torchrun, srun or mpirun; gloo on CPUs, NCCL on GPUs."""
import gzip, os, sys, time
import numpy as np, torch, torch.distributed as dist, torch.nn.functional as F
import dlsweep_trial as dt

p = dt.params({"lr": 0.1, "batch_size": 256, "epochs": 3, "hidden": 128, "seed": 0, "train_subset": 8192,
               "data_dir": "/usr/share/datasets/fashion-mnist", "pause_s": 0.0})
def idx(name):  # IDX files: big-endian header, then uint8 data
    raw = gzip.open(os.path.join(p["data_dir"], name + ".gz")).read()
    return np.frombuffer(raw, np.uint8, offset=16 if "images" in name else 8)
X = torch.tensor(idx("train-images-idx3-ubyte")[: p["train_subset"] * 784].reshape(-1, 784), dtype=torch.float32) / 255
Y = torch.tensor(idx("train-labels-idx1-ubyte")[: p["train_subset"]], dtype=torch.long)
Xt = torch.tensor(idx("t10k-images-idx3-ubyte").reshape(-1, 784), dtype=torch.float32) / 255
Yt = torch.tensor(idx("t10k-labels-idx1-ubyte"), dtype=torch.long)

gpu = torch.cuda.is_available()
dist.init_process_group("nccl" if gpu else "gloo")  # MASTER_ADDR/PORT, RANK, WORLD_SIZE: set by dlsweep
rank, world = dist.get_rank(), dist.get_world_size()
dev = torch.device(f"cuda:{int(os.environ.get('LOCAL_RANK', 0))}" if gpu else "cpu")
print(f"rank {rank} of {world} on {os.environ.get('SLURMD_NODENAME', os.uname().nodename)}", flush=True)
torch.manual_seed(p["seed"])
net = torch.nn.Sequential(torch.nn.Linear(784, p["hidden"]), torch.nn.ReLU(), torch.nn.Linear(p["hidden"], 10)).to(dev)
model = torch.nn.parallel.DistributedDataParallel(net)
opt = torch.optim.SGD(model.parameters(), lr=p["lr"], momentum=0.9)
dt.on_preempt(None)  # the signal sets should_stop(); all ranks agree below, then rank 0 saves
ckpt, epoch, start, step = dt.checkpoint_dir() / "last.pt", 0, 0, 0
if dt.resumed() and ckpt.exists():
    s = torch.load(ckpt)
    net.load_state_dict(s["net"]); opt.load_state_dict(s["opt"]); epoch, start, step = s["epoch"], s["batch"], s["step"]
B, n = p["batch_size"], len(X)
while epoch < p["epochs"]:
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(p["seed"] * 1000 + epoch))
    for b in range(start, n // B):
        idx_b = perm[b * B:(b + 1) * B][rank::world]  # this rank's share of the global batch
        opt.zero_grad()
        F.cross_entropy(model(X[idx_b].to(dev)), Y[idx_b].to(dev)).backward()  # DDP averages the gradients
        opt.step(); step += 1; time.sleep(p["pause_s"])
        stop = torch.tensor([float(dt.should_stop())], device=dev)
        dist.all_reduce(stop, op=dist.ReduceOp.MAX)  # every rank stops at the same step
        if stop.item():
            if rank == 0:
                torch.save({"net": net.state_dict(), "opt": opt.state_dict(), "epoch": epoch, "batch": b + 1, "step": step}, ckpt)
                dt.checkpointed(ckpt, step=step)
            dist.barrier(); sys.exit(dt.EXIT_RESUMABLE)
    epoch, start = epoch + 1, 0
    with torch.no_grad():
        out = net(Xt.to(dev))
        loss, acc = F.cross_entropy(out, Yt.to(dev)).item(), (out.argmax(1).cpu() == Yt).float().mean().item()
    dt.report(step=step, epoch=epoch, samples=step * B, val_loss=loss, val_acc=acc)
dt.final(step=step, epoch=epoch, samples=step * B, val_loss=loss, val_acc=acc)
