// meshstats: statistics of a volumetric mesh (test vectors M1-M5 in
// tests/conformance/test_runtime_sdk.py) — a nested input model with dict
// fields, a nested output model, dotted gradient paths.
#include <numeric>

#include "tesscpp/component.h"

using namespace tesscpp;  // NOLINT(google-build-using-namespace): an example reads better without prefixes

namespace {

Component MakeMeshstats() {
  Component c("meshstats", "0.1.0", "Summary statistics of a volumetric mesh.\n");

  ModelBuilder mesh_model("VolumetricMeshData");
  auto n_points = mesh_model.Add("n_points", Int{}, {.doc = "Number of points."});
  auto n_cells = mesh_model.Add("n_cells", Int{}, {.doc = "Number of cells."});
  auto points =
      mesh_model.Array<float>("points", {kAnyDim, 3}, {.differentiable = true, .doc = "Point coordinates."});
  auto num_points_per_cell =
      mesh_model.Array<float>("num_points_per_cell", {kAnyDim}, {.doc = "Number of points of each cell."});
  auto cell_connectivity = mesh_model.Array<int32_t>(
      "cell_connectivity", {kAnyDim}, {.doc = "Point indices of every cell, one after another."});
  const DictOf<ArrayOf<float>> table{{{kAnyDim, kAnyDim}}};
  mesh_model.Add("cell_data", table, {.doc = "Arrays defined per cell."});
  mesh_model.Add("point_data", table, {.doc = "Arrays defined per point."});
  mesh_model.Check([=](const ModelView& m) {
    if (m[num_points_per_cell].size() != m[n_cells]) {
      return Status::InvalidArgument("Length of num_points_per_cell must be ", m[n_cells]);
    }
    const auto counts = m[num_points_per_cell].values();
    const auto total = static_cast<int64_t>(std::accumulate(counts.begin(), counts.end(), 0.0));
    if (m[cell_connectivity].size() != total) {
      return Status::InvalidArgument("Length of cell_connectivity must be ", total);
    }
    return Status::OK();
  });
  (void)n_points;
  auto mesh = c.inputs().Model("mesh", mesh_model, {.doc = "The mesh to summarise."});

  ModelBuilder stats_model("SummaryStatistics");
  auto first = stats_model.Array<float>("first_point_coordinates", {3},
                                        {.differentiable = true, .doc = "Coordinates of point 0."});
  auto barycenter = stats_model.Array<float>(
      "barycenter", {3}, {.differentiable = true, .doc = "Mean of all point coordinates."});
  auto statistics = c.outputs().Model("statistics", stats_model, {.doc = "Statistics of the mesh."});

  c.Apply(
      [=](const ModelView& in, Record& out) -> Status {
        const ArrayRef<float> p = in[mesh][points];
        const int64_t n = p.shape()[0];
        Record& stats = out.Nested(statistics);
        TESS_ASSIGN_OR_RETURN(auto first_values, stats.NewArray<float>(first, {3}));
        TESS_ASSIGN_OR_RETURN(auto mean_values, stats.NewArray<float>(barycenter, {3}));
        for (int k = 0; k < 3; ++k) {
          first_values[k] = n > 0 ? p[k] : 0.0F;
          float sum = 0;  // float32 accumulation, as NumPy's mean of a float32 array
          for (int64_t i = 0; i < n; ++i) sum += p[i * 3 + k];
          mean_values[k] = sum / static_cast<float>(n);
        }
        return Status::OK();
      },
      "Computes the first point and the barycenter of a mesh.");

  c.AbstractEval(
      [=](const AbstractModelView&, Record& out) {
        Record& stats = out.Nested(statistics);
        stats.SetShapeDType(first, {{3}, Dtype::kFloat32});
        stats.SetShapeDType(barycenter, {{3}, Dtype::kFloat32});
        return Status::OK();
      },
      "Both statistics are float32 vectors of length 3.");

  c.Jacobian([=](const ModelView& in, const PathSet& jac_inputs, const PathSet& jac_outputs,
                 JacobianMap& jac) -> Status {
    if (jac_inputs != PathSet{"mesh.points"}) {
      return Status::InvalidArgument("only derivatives with respect to mesh.points are available");
    }
    const int64_t n = in[mesh][points].shape()[0];
    for (const std::string& out : jac_outputs) {
      TESS_ASSIGN_OR_RETURN(auto block, NewTensor<double>({3, n, 3}));
      std::fill(block.second.begin(), block.second.end(), 0.0);
      for (int64_t i = 0; i < 3; ++i) {
        if (out == "statistics.first_point_coordinates") {
          block.second[(i * n + 0) * 3 + i] = 1.0;
        } else {
          for (int64_t p = 0; p < n; ++p) block.second[(i * n + p) * 3 + i] = 1.0 / static_cast<double>(n);
        }
      }
      jac[out].insert_or_assign("mesh.points", block.first);
    }
    return Status::OK();
  });
  return c;
}

}  // namespace

TESSCPP_COMPONENT(MakeMeshstats)
