// A conditional node's body is CUDA's, freed with the graph that holds the node: it borrows that
// graph and cannot outlive it.
use ordo_cuda_core::Graph;

fn main() {
    let body = {
        let g = Graph::new().unwrap();
        let condition = g.conditional_handle(Some(1)).unwrap();
        g.add_while_node(&[], condition).unwrap().1
    };
    drop(body);
}
