"""Fusion and compression strategies on the iteration timeline: Cupcake, SAFusion, Espresso, sparsification-behind fusion."""
