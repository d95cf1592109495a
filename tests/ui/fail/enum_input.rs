use crudforge::Resource;

#[derive(Resource)]
#[resource(table = critters)]
pub enum Critter {
    //~^ ERROR Resource can only be derived for a struct with named fields, not an enum
    Cat,
    Dog,
}

fn main() {}
