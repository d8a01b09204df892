import OpModel
import Testing

/// The one cycle rule: one cycle per strongly connected component that has one, through its lowest
/// node, found depth first in the order dependencies are listed; ordered by that node.
struct DependencyCyclesTests {
    @Test func noCycles() {
        #expect(DependencyCycles.find([]).isEmpty)
        #expect(DependencyCycles.find([[], [0], [0, 1]]).isEmpty)
    }

    @Test func selfLoopsAndSimpleCyclesStartAtTheirLowestNode() {
        #expect(DependencyCycles.find([[0]]) == [[0]])
        // x after z, y after x, z after y: x → z → y.
        #expect(DependencyCycles.find([[2], [0], [1], []]) == [[0, 2, 1]])
        // Entered from a node behind it (0 runs after 2), the cycle still starts at its lowest node.
        #expect(DependencyCycles.find([[2], [2], [1]]) == [[1, 2]])
    }

    @Test func oneCyclePerComponentInOrderOfItsLowestNode() {
        // {3, 4} and {1, 2}, with 0 behind both.
        #expect(DependencyCycles.find([[3, 1], [2], [1], [4], [3]]) == [[1, 2], [3, 4]])
    }

    @Test func theWalkFollowsTheListedOrderAndBacktracks() {
        // 0's dependencies 1 and 2 both lead back; listed order decides.
        #expect(DependencyCycles.find([[1, 2], [0], [0]]) == [[0, 1]])
        #expect(DependencyCycles.find([[2, 1], [0], [0]]) == [[0, 2]])
        // 1 → 2 → 1 is a cycle too, but the one named goes through the lowest node, 0.
        #expect(DependencyCycles.find([[1], [2], [1, 0]]) == [[0, 1, 2]])
        // A dead end inside the component (3 only leads to 1, already on the path) is left.
        #expect(DependencyCycles.find([[1], [3, 2], [0], [1]]) == [[0, 1, 2]])
    }

    @Test func longChainsDoNotOverflowTheStack() {
        let n = 200_000
        let chain = (0..<n).map { [($0 + n - 1) % n] }   // i runs after i - 1; 0 after the last
        let cycles = DependencyCycles.find(chain)
        #expect(cycles.count == 1 && cycles[0].count == n && cycles[0].prefix(3) == [0, n - 1, n - 2])
    }
}
