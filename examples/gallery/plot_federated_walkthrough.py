"""
Federated walk-through: four parties, one synthetic table
=========================================================

Two regions each hold records of *different people*; within a region a
hospital and an insurer hold *different columns* of the same people, aligned
by a shared ID. That is a hybrid partition: K = 2 row slices times S = 2
column groups, four parties. This example shows

1. who holds what (:class:`~skdpsynth.federated.HybridPartition`, public
   metadata);
2. the parties running as servers that read their own files
   (:mod:`skdpsynth.federated.runtime`: ``PartyHost``, ``FederatedData``);
3. a fit of :class:`~skdpsynth.HybridSynthesizer` (RandDPGen) in which only
   messages reach the curator, its privacy ledger and the traffic;
4. what the curator actually received, and the synthetic data's fidelity
   beside a centralized :class:`~skdpsynth.MSTSynthesizer` fit on the pooled
   table.

The parties run in this process (``backend="local"``), which carries the same
bytes as one process per party (``backend="processes"``), a dask cluster or
the ``skdpsynth party`` / ``skdpsynth curator`` commands; see
:doc:`/federated`, section "Running the parties for real", for those and
for the trust model. On the 2-core reference machine the whole example runs in
well under a minute.

``random_state=0`` fixes the curator's random choices, and therefore makes
that part of the privacy noise reproducible: a real release must not fix the
seed. The parties draw their own noise from their operating system's entropy
(the default), so the fitted model and the numbers below change from run to
run.
"""

# %%
# Who holds what: the public roster
# ---------------------------------
# The table is the bundled Adult benchmark, 8 of its columns, all 48,842
# records. The domain (columns and their numbers of codes) is public. So is
# the roster: which record IDs each party holds and which columns. An
# explicit roster like this one is the fixed public universe of people (an
# absent person is an all-zero row), so slice sizes read from it reveal
# nothing about anyone's data.
import os
import shutil
import tempfile
import time
import warnings

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from skdpsynth import HybridSynthesizer, MSTSynthesizer
from skdpsynth.datasets import load_adult
from skdpsynth.federated import Federation, HybridPartition
from skdpsynth.federated import FederatedData
from skdpsynth.federated.runtime import PartyHost
from skdpsynth.marginals import marginal
from skdpsynth.metrics import marginal_tvd
from skdpsynth.privacy import ReproducibleNoiseWarning

adult = load_adult(discretized=True)
hospital = ["age", "sex", "race", "income>50K"]
insurer = ["workclass", "education-num", "occupation", "hours-per-week"]
table = adult.frame[hospital + insurer]
domain = adult.domain.project(table.columns)

# Two regions of (seeded, near-equal) disjoint records; the same column split in both.
regions = HybridPartition.grid(len(table), list(table.columns), n_slices=2,
                               column_groups=[hospital, insurer], random_state=0)
partition = HybridPartition(
    [regions.slice_rows(0), regions.slice_rows(1)], [hospital, insurer],
    party_names={(0, 0): "north-hospital", (0, 1): "north-insurer",
                 (1, 0): "south-hospital", (1, 1): "south-insurer"})
with pd.option_context("display.width", 160, "display.max_columns", None, "display.max_colwidth", 60):
    print(partition.shape_summary())

# %%
# The parties keep their records
# -------------------------------
# Each party's records go to a file of its own (in a deployment each party
# already has one on its own machine). A :class:`~skdpsynth.federated.runtime.PartyHost`
# names the file; the party's server reads it *where the party runs* and
# checks it against the public job (columns, roster size, codes inside the
# domain). The curator's side, :class:`~skdpsynth.federated.FederatedData`,
# holds the domain, the roster and the hosts, and no records.
storage = tempfile.mkdtemp(prefix="skdpsynth-parties-")
hosts = {}
for party in partition.parties():
    path = os.path.join(storage, f"{party.name}.npy")
    np.save(path, table.iloc[party.rows][list(party.columns)].to_numpy())
    hosts[party.name] = PartyHost(path)  # noise="private" (default): the party's own entropy
data = FederatedData(domain, partition, hosts, backend="local")
print(data)

# The setup round (public keys, the job) spends no privacy budget; afterwards
# every server can report what it holds.
backend = data.make_backend()
with Federation.connect(backend, partition, domain, seed=0):
    for name, server in backend.servers.items():
        print(server.holds())

# %%
# Fit: only messages reach the curator
# ------------------------------------
# ``secure_computation="cryptographic"`` is required for parties that keep
# their records. A marginal one party holds in its region comes back as that
# party's noisy count; a marginal split between the hospital and the insurer
# is computed by a secure two-party product: the curator deals masks, the two
# parties exchange masked data sealed for each other, and each returns its
# share plus its Gaussian noise under pairwise secure aggregation, so the
# curator decodes the noisy count and nothing else.
start = time.perf_counter()
with warnings.catch_warnings():
    # A fixed seed makes the curator's noise reproducible; the synthesizer warns about it.
    warnings.simplefilter("ignore", ReproducibleNoiseWarning)
    model = HybridSynthesizer(epsilon=1.0, delta=1e-9, secure_computation="cryptographic", random_state=0)
    model.fit(data)
    synthetic = model.sample()
print(f"fit in {time.perf_counter() - start:.1f} s; {len(synthetic):,} synthetic records "
      f"(the noisy record count)")
shutil.rmtree(storage)  # the fit is done: the parties' stand-in files go
traffic = model.runtime_
print(f"{traffic['requests']} requests to {traffic['n_parties']} parties, "
      f"{traffic['bytes_sent'] / 1e6:.0f} MB sent, {traffic['bytes_received'] / 1e6:.0f} MB received")

# %%
# The privacy ledger
# ------------------
# One entry per distributed measurement; ``details["per_party"]`` splits its
# cost among the parties of each region. Within a region the parties' shares
# add up (they describe the same people); the regions hold different people,
# so they compose in parallel. The entries sum to the budget exactly.
ledger = model.privacy_ledger_
print(ledger)
print(ledger.to_frame()[["description", "mechanism", "rho"]].head(6).to_string())
first = ledger.entries[0]
per_party = {name: f"{rho:.2e}" for name, rho in first.details["per_party"].items()}
print(f"\n{first.description}: rho {first.rho:.2e}, per party {per_party}")
print(f"\ntotal: {ledger.total_rho():.6f}-zCDP, i.e. ({ledger.epsilon(1e-9):.3f}, 1e-9)-DP")

# %%
# What the curator saw, and how good the synthetic data are
# ---------------------------------------------------------
# Left: one cross-party marginal the fit measured (a hospital column by an
# insurer column), the exact counts beside the noisy counts the curator
# decoded, with ±1 noise standard deviation. Only this script, which plays all
# four parties, can compute the exact counts; the curator never does.
# Right: the average total variation distance (TVD) of the 1- and 2-way
# marginals of the synthetic data, for the federated fit and for a
# centralized MST fit on the pooled table at the same (ε, δ) (a centralized
# fit needs all the records in one place: a reference, not an option here).
cross = [m for m in model.measurements_
         if {a in hospital for a in m.clique} == {True, False} and m.values.size <= 40]
shown = min(cross, key=lambda m: m.sigma)
exact = marginal(table[list(domain.attrs)].to_numpy(), domain, shown.clique).ravel()
print(f"shown: {' x '.join(shown.clique)}, {exact.size} cells, noise s.d. {shown.sigma:.1f} records")

with warnings.catch_warnings():
    warnings.simplefilter("ignore", ReproducibleNoiseWarning)
    central = MSTSynthesizer(epsilon=1.0, delta=1e-9, domain=domain.to_dict(), random_state=0).fit(table)
    central_synthetic = central.sample()
tvd = {"federated RandDPGen\n(4 parties)": marginal_tvd(table, synthetic, ways=(1, 2), domain=domain),
       "centralized MST\n(pooled table)": marginal_tvd(table, central_synthetic, ways=(1, 2), domain=domain)}
for name, values in tvd.items():
    print(f"{name.replace(chr(10), ' ')}: 1-way TVD {values[1]:.4f}, 2-way TVD {values[2]:.4f}")

fig, (ax_m, ax_t) = plt.subplots(1, 2, figsize=(11, 4), gridspec_kw={"width_ratios": [3, 2]})
cells = np.arange(exact.size)
ax_m.bar(cells - 0.2, exact, width=0.4, label="exact count (never sent)")
ax_m.bar(cells + 0.2, shown.values, width=0.4, yerr=shown.sigma, capsize=2,
         label="noisy count the curator decoded")
ax_m.set_xlabel(f"cell of {' x '.join(shown.clique)} (flattened codes)")
ax_m.set_ylabel("records")
ax_m.set_title("A cross-party marginal: exact vs received")
ax_m.legend(fontsize=8)
width = 0.35
for k, (name, values) in enumerate(tvd.items()):
    ax_t.bar(np.arange(2) + (k - 0.5) * width, [values[1], values[2]], width=width, label=name)
ax_t.set_xticks(np.arange(2), ["1-way marginals", "2-way marginals"])
ax_t.set_ylabel("average TVD (lower is better)")
ax_t.set_title("Fidelity at ε = 1, δ = 1e-9")
ax_t.legend(fontsize=8)
fig.tight_layout()
plt.show()

# %%
# The same fit on real infrastructure
# -----------------------------------
# Only the ``backend`` changes; the curator sends and receives the same bytes.
# With one local process per party, guard the script's top level (the
# processes are started with ``spawn``, which re-imports the main module)::
#
#     if __name__ == "__main__":
#         data = FederatedData(domain, partition, hosts, backend="processes")
#         HybridSynthesizer(epsilon=1.0, secure_computation="cryptographic").fit(data)
#
# On a dask cluster, one worker per party, named after it, with its file next
# to it::
#
#     client = distributed.Client("tcp://SCHEDULER:8786")
#     hosts = {name: PartyHost(path_on_that_worker, worker=name) for name, ... in ...}
#     HybridSynthesizer(epsilon=1.0, secure_computation="cryptographic").fit(
#         FederatedData(domain, partition, hosts, backend=client))
#
# Across organisations that do not share a cluster, each party runs
# ``skdpsynth party`` on its own machine and the curator ``skdpsynth curator``,
# exchanging request and reply files through a shared folder (see
# :doc:`/federated` and :doc:`/cli`).
