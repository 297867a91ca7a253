// bine/collective.hpp: the collectives and the data the two-one fold moves for each.
// Shared by the compiler (instantiation, verification) and the MPI runtime, so both fold
// the same way (docs/language.md, "fold").
#pragma once

namespace bine {

/// The collectives the language knows (docs/language.md, "Collective contracts").
enum class Collective { bcast, reduce, allreduce, reduce_scatter, allgather, gather, scatter, alltoall };

/// What a fold round moves: nothing, the whole vector, or the odd virtual rank's own block.
enum class FoldData { none, all, own_block };

/// The fold's extra rounds: before the body (prologue) the odd rank v hands its data to
/// v - 1; after it (epilogue) v - 1 hands v its result.
struct FoldSteps {
  FoldData prologue, epilogue;
};

constexpr FoldSteps fold_steps(Collective c) {
  switch (c) {
    case Collective::allreduce: return {FoldData::all, FoldData::all};
    case Collective::reduce: return {FoldData::all, FoldData::none};
    case Collective::bcast: return {FoldData::none, FoldData::all};
    case Collective::reduce_scatter: return {FoldData::all, FoldData::own_block};
    case Collective::allgather: return {FoldData::own_block, FoldData::all};
    case Collective::gather: return {FoldData::own_block, FoldData::none};
    case Collective::scatter: return {FoldData::none, FoldData::own_block};
    case Collective::alltoall: return {FoldData::none, FoldData::none};
  }
  return {FoldData::none, FoldData::none};
}

/// Collectives that combine data with an operator.
constexpr bool collective_reduces(Collective c) {
  return c == Collective::reduce || c == Collective::allreduce || c == Collective::reduce_scatter;
}

}  // namespace bine
