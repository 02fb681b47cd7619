#include "cluster/load_balancer.h"

#include <random>
#include <thread>

namespace arenarpc::cluster {

std::unique_ptr<LoadBalancer> MakeLoadBalancer(std::string_view name, std::string* error) {
  if (name == "rr") return MakeRoundRobin();
  if (name == "random") return MakeRandom();
  if (name == "wrr") return MakeWeightedRoundRobin();
  if (name == "c_murmurhash") return MakeConsistentHash();
  if (name == "la") return MakeLocalityAware();
  *error = "load balancer '" + std::string(name) +
           "' is unknown (expected rr, random, wrr, c_murmurhash or la)";
  return nullptr;
}

uint64_t ThreadRandom() noexcept {
  thread_local std::mt19937_64 generator{
      std::random_device{}() ^ std::hash<std::thread::id>{}(std::this_thread::get_id())};
  return generator();
}

}  // namespace arenarpc::cluster
