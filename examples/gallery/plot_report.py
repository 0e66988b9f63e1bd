"""
The fidelity report
===================

:func:`skdpsynth.metrics.write_report` writes a self-contained HTML report
comparing a real and a synthetic table: the privacy statement of the fit
(from its :class:`~skdpsynth.privacy.PrivacyLedger`), the average k-way
marginal total variation distance (TVD), optionally train-on-synthetic
accuracy, per-column distributions and Cramér's V association heat maps.
The ``skdpsynth`` command writes the same report with ``--report`` (see
:doc:`/cli`); :doc:`/evaluation` describes every metric in it.

The report reads the real data in the clear: it is an evaluation tool for
the data owner and is **not** differentially private. Keep it with the data.

Here: :class:`~skdpsynth.MSTSynthesizer` at ε = 1 (δ = 1e-9) on the
integer-coded Adult benchmark, the report written to a temporary folder, and
its main numbers and one of its plots shown below. ``random_state=0`` makes
the example reproducible, and therefore also its privacy noise: a real
release must not fix the seed.
"""

# %%
# Fit and sample
# --------------
import tempfile
import warnings
from pathlib import Path

import matplotlib.image as mpimg
import matplotlib.pyplot as plt
import pandas as pd

from skdpsynth import MSTSynthesizer
from skdpsynth.datasets import load_adult
from skdpsynth.metrics import write_report
from skdpsynth.privacy import ReproducibleNoiseWarning

adult = load_adult(discretized=True)
real, domain = adult.frame, adult.domain
delta = 1e-9
with warnings.catch_warnings():
    # A fixed seed makes the noise reproducible; the synthesizer warns about it.
    warnings.simplefilter("ignore", ReproducibleNoiseWarning)
    mst = MSTSynthesizer(epsilon=1.0, delta=delta, domain=domain.to_dict(), random_state=0).fit(real)
    synthetic = mst.sample()

# %%
# Write the report
# ----------------
# The report computes its numbers on categorical "code" tables with the same
# categories on both sides; for this already-discretized benchmark the codes
# are the columns themselves, with the public domain's categories 0..size-1.
dtypes = {c: pd.CategoricalDtype(range(domain[c])) for c in real.columns}
tmp = tempfile.TemporaryDirectory()
out = write_report(
    Path(tmp.name) / "report.html",
    real=real,
    synthetic=synthetic,
    real_codes=real.astype(dtypes),
    synthetic_codes=synthetic.astype(dtypes),
    ledger=mst.privacy_ledger_,
    delta=delta,
    title="MST on Adult, ε = 1",
)
print(f"wrote {out['html'].name} ({out['html'].stat().st_size / 1e6:.1f} MB, plots embedded) "
      f"and {len(out['images'])} PNG files")
print(mst.privacy_ledger_.statement(delta))

# %%
# Fidelity: average k-way TVD
# ---------------------------
# The report's Fidelity table: 0 means identical marginals, 1 disjoint ones.
tvd = pd.Series(out["tvd"], name="average TVD").rename_axis("k-way marginals")
print(tvd.round(4).to_string())

# %%
# Associations: the largest changes in Cramér's V
# -----------------------------------------------
# The report lists the attribute pairs whose association (bias-uncorrected
# Cramér's V on the code tables) changed most between real and synthetic data.
real_v, synth_v = out["cramers_v_real"], out["cramers_v_synthetic"]
change = (synth_v - real_v).stack()
pairs = change[[a < b for a, b in change.index]]
largest = pairs.reindex(pairs.abs().sort_values(ascending=False).index)[:5]
print(pd.DataFrame({"real": [real_v.loc[a, b] for a, b in largest.index],
                    "synthetic": [synth_v.loc[a, b] for a, b in largest.index]},
                   index=[f"{a} × {b}" for a, b in largest.index]).round(3).to_string())

# %%
# One of the report's plots
# -------------------------
# The PNG files sit next to the HTML (and are embedded in it); here the
# association heat maps (real, synthetic, and their absolute difference),
# loaded as written.
print("plots written:", ", ".join(p.name for p in out["images"]))
heat_map = next(p for p in out["images"] if p.name == "associations.png")
image = mpimg.imread(heat_map)
fig, ax = plt.subplots(figsize=(image.shape[1] / 100, image.shape[0] / 100))
ax.imshow(image)
ax.axis("off")
fig.tight_layout()
plt.show()
tmp.cleanup()
