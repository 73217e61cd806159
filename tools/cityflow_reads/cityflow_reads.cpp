// marlinkit's per-second reads of a CityFlow Engine, in C++ (module `marlinkit_cityflow_reads`).
//
// The traffic environment needs, every simulated second, the vehicles on each of the 192 observed
// lanes, how many entered and left each lane, how many on each are halted (< 0.1 m/s, CityFlow's
// own `get_lane_waiting_vehicle_count` criterion), and which vehicles entered and left the network.
// CityFlow's API offers these only as whole-network maps keyed by strings (`getLaneVehicles`,
// `getVehicleSpeed`): building them costs ~45 us a second in C++ and converting them into Python
// dicts as much again, together about as much as the simulation step itself. This module reads
// the same lists those two calls read (each lane's vehicle list in the Engine's roadnet, and its
// running vehicles) without building the maps, and does the bookkeeping of `_LaneReader` and of
// `CityFlowEngine.step` (marlinkit/envs/traffic/engines.py, cityflow_engine.py) here, so Python
// gets one (4, lanes) array and two short lists. The Python path stays beside it as the reference;
// tests/envs/test_traffic_cityflow.py checks the two agree byte for byte over whole episodes, and
// both against CityFlow's own per-lane reads.
//
// Those two lists are private members of CityFlow::Engine (`roadnet`, `getRunningVehicles`). They
// are reached with the standard explicit-instantiation idiom below (access checking does not apply
// to the template arguments of an explicit instantiation), which names them at compile time: a
// CityFlow whose Engine lacks them fails to build this module, it cannot misread one.
//
// Built by tools/build_cityflow.sh against the same CityFlow source tree, compile settings and
// pybind11 as the `cityflow` module, whose `cityflow.Engine` objects it receives (pybind11 shares
// registered types between modules built with the same pybind11 and compiler). The module carries a
// build fingerprint (`fingerprint`: the CityFlow version and commit, the SHA-256 of the `cityflow`
// module file it was built beside, the compiler and the pybind11 version); marlinkit checks it at load
// and refuses the module, naming what differs, beside any other `cityflow` build
// (marlinkit/envs/traffic/cityflow_engine.py). Nothing of CityFlow is copied here.

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/engine.h"
#include "pybind11/numpy.h"
#include "pybind11/pybind11.h"
#include "pybind11/stl.h"

namespace py = pybind11;

namespace {

// Rows of Reading.lanes (engines.py: INFLOW, OUTFLOW, HALTING, COUNT = range(4)).
constexpr int INFLOW = 0, OUTFLOW = 1, HALTING = 2, COUNT = 3;
constexpr double HALTING_SPEED = 0.1;  // m/s, as CityFlow's get_lane_waiting_vehicle_count

// The flow index of a vehicle id "flow_<index>_0" (marlinkit writes one flow entry per vehicle).
int flow_index(const std::string &id) {
    static const std::string prefix = "flow_", suffix = "_0";
    if (id.size() > prefix.size() + suffix.size() && id.compare(0, prefix.size(), prefix) == 0
        && id.compare(id.size() - suffix.size(), suffix.size(), suffix) == 0) {
        const char *begin = id.c_str() + prefix.size();
        char *end = nullptr;
        long index = std::strtol(begin, &end, 10);
        if (end == id.c_str() + id.size() - suffix.size() && end != begin && index >= 0)
            return static_cast<int>(index);
    }
    throw std::invalid_argument("marlinkit_cityflow_reads: vehicle id " + id
                                + " is not flow_<index>_0 (flows written by marlinkit's write_cityflow_flow)");
}

// Whether `v` is in `values` (a lane holds a handful of vehicles: a scan beats a set).
bool contains(const std::vector<int> &values, int v) {
    return std::find(values.begin(), values.end(), v) != values.end();
}

// The two private members of CityFlow::Engine read here (see the top of the file).
template <typename Tag, typename Tag::type Member>
struct Expose {
    friend typename Tag::type member(Tag) { return Member; }
};
struct EngineRoadnet {
    using type = CityFlow::RoadNet CityFlow::Engine::*;
    friend type member(EngineRoadnet);
};
struct EngineRunningVehicles {
    using type = std::vector<const CityFlow::Vehicle *> (CityFlow::Engine::*)(bool) const;
    friend type member(EngineRunningVehicles);
};
template struct Expose<EngineRoadnet, &CityFlow::Engine::roadnet>;
template struct Expose<EngineRunningVehicles, &CityFlow::Engine::getRunningVehicles>;

class LaneReads {
public:
    explicit LaneReads(const std::vector<std::string> &lane_ids)
        : ids_(lane_ids), before_(lane_ids.size()), now_(lane_ids.size()) {
        std::unordered_map<std::string, int> seen;
        for (size_t j = 0; j < ids_.size(); ++j) {
            if (!seen.emplace(ids_[j], static_cast<int>(j)).second)
                throw std::invalid_argument("marlinkit_cityflow_reads: lane " + ids_[j] + " listed twice");
        }
    }

    // One second's reads of `engine` (call after its next_step): (time, lanes, departed, arrived),
    // exactly what CityFlowEngine.step's Python path returns.
    py::tuple read(CityFlow::Engine &engine) {
        bind(engine);
        const size_t n = lanes_.size();
        py::array_t<double> lanes({static_cast<py::ssize_t>(4), static_cast<py::ssize_t>(n)});
        double *out = lanes.mutable_data();  // C order: row r, lane j at r * n + j
        std::fill(out, out + 4 * n, 0.0);

        for (size_t j = 0; j < n; ++j) {  // each lane's vehicle list, as Engine::getLaneVehicles reads it
            std::vector<int> &ids = now_[j];
            ids.clear();
            for (const CityFlow::Vehicle *vehicle : lanes_[j]->getVehicles())
                ids.push_back(flow_index(vehicle->getId()));
        }
        for (size_t j = 0; j < n; ++j) {
            const std::vector<int> &ids = now_[j], &old = before_[j];
            out[COUNT * n + j] = static_cast<double>(ids.size());
            if (ids == old) continue;
            // A vehicle new on the lane entered it; one gone from it left it (and is forgotten there,
            // unless already recorded on the lane it moved to, as the Python reader's lane-by-lane pass).
            for (int v : old) {
                if (contains(ids, v)) continue;
                out[OUTFLOW * n + j] += 1.0;
                auto at = lane_of_.find(v);
                if (at != lane_of_.end() && at->second == static_cast<int>(j)) lane_of_.erase(at);
            }
            for (int v : ids) {
                if (contains(old, v)) continue;
                out[INFLOW * n + j] += 1.0;
                lane_of_[v] = static_cast<int>(j);
            }
        }
        before_.swap(now_);

        std::vector<int> running;  // as Engine::getVehicleSpeed reads them
        for (const CityFlow::Vehicle *vehicle : (engine.*member(EngineRunningVehicles()))(false)) {
            int v = flow_index(vehicle->getId());
            running.push_back(v);
            if (vehicle->getSpeed() < HALTING_SPEED) {
                auto at = lane_of_.find(v);
                if (at != lane_of_.end()) out[HALTING * n + at->second] += 1.0;
            }
        }
        std::sort(running.begin(), running.end());
        std::vector<int> departed, arrived;
        std::set_difference(running.begin(), running.end(), running_.begin(), running_.end(),
                            std::back_inserter(departed));
        std::set_difference(running_.begin(), running_.end(), running.begin(), running.end(),
                            std::back_inserter(arrived));
        running_.swap(running);
        return py::make_tuple(engine.getCurrentTime(), lanes, departed, arrived);
    }

    // Whether the flow's `index`-th vehicle was running at the last read.
    bool is_running(int index) const { return std::binary_search(running_.begin(), running_.end(), index); }

private:
    // The observed lanes of `engine`'s roadnet, found by id at the first read; a LaneReads reads one Engine.
    void bind(CityFlow::Engine &engine) {
        if (engine_ == &engine) return;
        if (engine_ != nullptr)
            throw std::invalid_argument("marlinkit_cityflow_reads: a LaneReads reads one Engine "
                                        "(make one per episode)");
        std::unordered_map<std::string, const CityFlow::Lane *> by_id;
        for (const CityFlow::Lane *lane : (engine.*member(EngineRoadnet())).getLanes())
            by_id.emplace(lane->getId(), lane);
        for (const std::string &id : ids_) {
            auto found = by_id.find(id);
            if (found == by_id.end())
                throw std::invalid_argument("marlinkit_cityflow_reads: the Engine's roadnet has no lane " + id);
            lanes_.push_back(found->second);
        }
        engine_ = &engine;
    }

    std::vector<std::string> ids_;               // the observed lanes' CityFlow ids, in observation order
    const CityFlow::Engine *engine_ = nullptr;   // the Engine read (bound at the first read)
    std::vector<const CityFlow::Lane *> lanes_;  // its observed lanes
    std::vector<std::vector<int>> before_, now_; // vehicles on each observed lane at the last read / now
    std::unordered_map<int, int> lane_of_;       // observed lane each vehicle is on (absent: none)
    std::vector<int> running_;                   // running vehicles at the last read, sorted
};

}  // namespace

PYBIND11_MODULE(marlinkit_cityflow_reads, m) {
    m.doc() = "marlinkit's per-second reads of a CityFlow Engine (see tools/cityflow_reads/cityflow_reads.cpp)";
    // The `cityflow` build this was made beside (the Engine layout it assumes is that build's), and how.
    py::dict fingerprint;
    fingerprint["cityflow_version"] = CITYFLOW_VERSION;
    fingerprint["cityflow_module_sha256"] = CITYFLOW_MODULE_SHA256;
    fingerprint["compiler"] = __VERSION__;
    fingerprint["pybind11"] = std::to_string(PYBIND11_VERSION_MAJOR) + "." + std::to_string(PYBIND11_VERSION_MINOR)
                              + "." + std::to_string(PYBIND11_VERSION_PATCH);
    m.attr("fingerprint") = fingerprint;
    m.attr("cityflow_version") = CITYFLOW_VERSION;
    py::class_<LaneReads>(m, "LaneReads")
        .def(py::init<const std::vector<std::string> &>(), py::arg("lane_ids"),
             "Reads of the lanes `lane_ids` (CityFlow ids, in observation order), from the start of an episode.")
        .def("read", &LaneReads::read, py::arg("engine"),
             "(time, lanes (4, n) INFLOW/OUTFLOW/HALTING/COUNT, departed, arrived) after a next_step of `engine`.")
        .def("is_running", &LaneReads::is_running, py::arg("index"),
             "Whether the flow's index-th vehicle was running at the last read.");
}
